// perfcached — the RESP door's command table, per-worker environment and helpers.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Every command is one row: name, arity (Redis rule: N = exactly N
// arguments including the name, -N = at least N), flags and a handler.
// Handlers parse arguments and reply; the work itself is a cache:: call
// (the connection-free "Op" layer). The flags:
//   kWrite     changes data                     kRead    reads data only
//   kFast      O(1) / O(log N)                  kAdmin   server administration
//   kNoAuth    allowed before AUTH (AUTH, HELLO, QUIT)
//   kLoading   allowed while loading (unused for now)
//   kPubSub    allowed while the connection is in subscribed mode
//   kDenyOom   may grow memory (Redis's denyoom): above maxmemory the door
//              evicts by the policy first, or refuses it with -OOM

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/journal.h"
#include "cache/table.h"
#include "db/wal_ring.h"
#include "net/resp.h"
#include "net/server.h"
#include "proc/config.h"
#include "proc/proctable.h"

namespace modules::resp {

enum CmdFlag : uint32_t {
  kWrite = 1, kRead = 2, kFast = 4, kAdmin = 8, kNoAuth = 16, kLoading = 32,
  kPubSub = 64,  // allowed in subscribed mode
  kDenyOom = 128,  // may grow memory: evicts first, or is refused above maxmemory
};

struct Env;
struct CmdCtx;
using Handler = void (*)(CmdCtx&);

struct CommandSpec {
  const char* name;
  int arity;
  uint32_t flags;
  Handler handler;
  int first_key = 0, last_key = 0, key_step = 0;
  // COMMAND DOCS "group" (Redis's names: string, generic, connection,
  // server, pubsub, hash, set ...); nullptr: the family's (RegisterAll).
  const char* group = nullptr;
  // A container (CLIENT, CONFIG, COMMAND): its subcommands' full names,
  // "client|id", ..., nullptr-terminated. Dispatch answers an unknown
  // subcommand, and names the command "client|id" (CLIENT INFO cmd=,
  // errors), as Redis does.
  const char* const* subcommands = nullptr;
};

// The flags as COMMAND INFO names them (Redis's words), in reply order.
// kPubSub is not one: it is the door's "allowed in subscribed mode" (PING
// and QUIT have it), not Redis's "pubsub" (a pub/sub command).
struct FlagName {
  uint32_t bit;
  const char* name;
};
inline constexpr FlagName kFlagNames[] = {
    {kWrite, "write"}, {kRead, "readonly"}, {kAdmin, "admin"},
    {kDenyOom, "denyoom"}, {kLoading, "loading"}, {kFast, "fast"}, {kNoAuth, "no_auth"},
};

// What a worker's handlers share: engine context, config, the door's stats.
struct Env {
  cache::Ctx* ctx = nullptr;
  const proc::Config* cfg = nullptr;
  proc::ProcTable* procs = nullptr;
  proc::ProcEntry* self = nullptr;
  net::Server* server = nullptr;
  std::vector<std::string> db_names;          // SELECT index -> collection
  std::vector<cache::TableRef> db_refs;       // cached handles (reopened when stale)
  std::unordered_map<std::string, const CommandSpec*> table;
  std::vector<const CommandSpec*> ordered;    // for COMMAND
  std::vector<const char*> groups;            // ordered[i]'s DOCS group
  // Dispatch index: (length, first letter) -> rows; a lookup is a few
  // case-insensitive compares, no hashing and no allocation.
  std::vector<const CommandSpec*> by_shape[16 * 32];
  std::vector<char> value_buf = std::vector<char>(64 * 1024);  // GET copy-out
  int64_t start_ms = 0;
  int timeout_s = 0;                          // CONFIG SET timeout
  std::string scratch;
  // Pub/sub: connections of this worker in subscribed mode, and the rank
  // whose event channel ("worker:N", proc/events.h) the worker subscribes
  // to every event while the count is non-zero (0: no channel).
  int pubsub_conns = 0;
  int event_rank = 0;
  // This worker's WAL ring (inactive without a WAL), and what went wrong
  // logging the current command from a hook (eviction, clear).
  db::WalLogger wal;
  std::string wal_error;
  std::string wal_name;  // LogKeyIn's copy of a collection's name
  int64_t evict_idle_until_ms = 0;  // EvictInBackground: the policy found nothing; wait until then
  // The aggregate writes of the command running (cache::Ctx::dict_journal,
  // set while a logged write runs): WalLogWrite logs large ones by field.
  std::vector<cache::DictChange> journal;
};

struct CmdCtx {
  Env& env;
  net::Conn& conn;
  std::span<const std::string_view> argv;
  net::Reply r;
  size_t argc() const { return argv.size(); }
  std::string_view arg(size_t i) const { return argv[i]; }
};

// ---- registration (families.cc) ----
void RegisterStringFamily(Env& e);
void RegisterKeysFamily(Env& e);
void RegisterServerFamily(Env& e);
void RegisterPubSubFamily(Env& e);
void RegisterHashFamily(Env& e);
void RegisterSetFamily(Env& e);
// A connection leaves subscribed mode (or closes while in it).
void PubSubLeave(Env& e, net::Conn& c);
// Deliver one event datagram (JSON-RPC notification) to this worker's subscribers.
void PubSubDeliver(Env& e, std::string_view datagram);
void Register(Env& e, std::span<const CommandSpec> rows);
// Every family's rows into e.table / e.ordered / e.groups (the dispatch
// table; COMMAND and --list-commands are computed from it).
void RegisterAll(Env& e);
// The dispatch table, one row a line: "name arity flag,flag first last step group".
std::string ListCommands();
// Build the table and the db mapping for a worker.
void InitEnv(Env& e);
// The door's dispatch: lookup, arity, auth, run.
void Dispatch(Env& e, net::Conn& c);

// A worker's tick: while used memory is above maxmemory under an evicting
// policy, evict up to 128 keys (Redis evicts before every command and in
// its eviction time proc after CONFIG SET maxmemory; here only commands
// that may grow memory make room, so a lowered limit or a read-only load
// comes down by these steps). Skipped while the WAL ring lacks room for
// the tombstones.
void EvictInBackground(Env& e);

// ---- the WAL (wal_log.cc) ----
// After a write command that did not answer an error: log the state of
// every key it changed. False (*err): a record could not be logged.
bool WalLogWrite(Env& e, net::Conn& c, const CommandSpec& spec, std::string* err);
// A key an eviction or a clear removed (at `version`): a tombstone. A
// tombstone that cannot be logged sets e.wal_error (Dispatch withdraws the
// command's reply).
void WalLogRemoved(Env& e, std::string_view coll, std::string_view key, uint64_t version);

// ---- while recovery runs (loading_door.cc): -LOADING on the bound sockets ----
void* LoadingBegin(const std::vector<int>& listen_fds);
void LoadingEnd(void* door);

// ---- helpers (command.cc) ----
// The collection behind the connection's SELECTed db; false + error reply
// when it no longer exists.
bool CurrentTable(CmdCtx& c, cache::TableRef* t);
bool TableForDb(Env& e, int db, cache::TableRef* t);
bool EqNoCase(std::string_view a, std::string_view b);
// Redis string2ll / strtold rules. ...OrReply variants reply on failure.
bool ParseLL(std::string_view s, long long* out);
bool ParseLLOrReply(CmdCtx& c, std::string_view s, long long* out);
// A SCAN-family cursor as Redis 7.0 reads it (strtoul, base 10): up to the
// first NUL byte; optional '+' or '-' (-1 is ULONG_MAX); "" is 0. False
// (Redis: "invalid cursor") for leading white space, a byte after the
// digits, no digits after a sign, or a value beyond 64 bits.
bool ParseScanCursor(std::string_view s, uint64_t* out);
// HSCAN / SSCAN key cursor [MATCH glob] [COUNT n] (hash_family.cc): the
// cursor, then the key's type (`type` as TYPE names it), then the options,
// in Redis's order. False after replying (an absent key with bad options
// answers an empty scan, as Redis does).
bool ParseScanArgs(CmdCtx& c, const cache::TableRef& t, std::string_view type,
                   uint64_t* cursor, std::string_view* glob, uint64_t* count);
// A DB index (SELECT, COPY ... DB) as Redis reads it: an integer, then
// within a C int ("value is out of range, value must between ..." if not),
// before the "DB index is out of range" check the caller makes.
bool ParseIntOrReply(CmdCtx& c, std::string_view s, int* out);
bool ParseLongDouble(std::string_view s, long double* out);
// Map an engine status to its Redis error reply.
void ReplyStatus(CmdCtx& c, mem::Status s);
void WrongArity(CmdCtx& c, std::string_view name);
int64_t NowMs(const Env& e);
// Format like Redis's INCRBYFLOAT (humanfriendly long double).
std::string FormatLongDouble(long double v);

// The Redis version INFO and HELLO report (the command set we follow).
inline constexpr char kRedisCompatVersion[] = "7.0.0";
inline constexpr char kErrSyntax[] = "ERR syntax error";
// HRANDFIELD / SRANDMEMBER counts (Redis's getRangeLongFromObjectOrReply text).
inline constexpr char kErrRandomRange[] =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
inline constexpr char kErrRandomRepeats[] =
    "ERR count is out of range: a negative count asks for at most 16777216 elements";
inline constexpr char kErrNotInt[] = "ERR value is not an integer or out of range";
inline constexpr char kErrNotFloat[] = "ERR value is not a valid float";
inline constexpr char kErrWrongType[] =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr char kErrOverflow[] = "ERR increment or decrement would overflow";
inline constexpr char kErrNoKey[] = "ERR no such key";
inline constexpr char kErrOom[] = "OOM command not allowed when used memory > 'maxmemory'.";
inline constexpr char kErrTooBig[] = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr char kErrNoAuth[] = "NOAUTH Authentication required.";

}  // namespace modules::resp
