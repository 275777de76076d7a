// perfcached — unit tests for proc/reload and the reload side of proc/config: diff, records, the channel.
// Copyright (c) 2026 the perfcached authors.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proc/config.h"
#include "proc/proctable.h"
#include "proc/reload.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using proc::Config;
using proc::ConfigChange;

namespace {

Config Finished(std::vector<std::string> overrides) {
  Config c;
  std::string err;
  proc::ConfigSource src{"", std::move(overrides)};
  if (!proc::BuildConfig(src, &c, &err)) FAIL(err.c_str());
  return c;
}

const ConfigChange* Find(const std::vector<ConfigChange>& d, const std::string& key) {
  for (const auto& ch : d) {
    if (ch.key == key) return &ch;
  }
  return nullptr;
}

std::string Bytes(const Config& c) { return proc::EncodeReload(proc::ReloadableValues(c)); }

}  // namespace

TEST_GROUP(ReloadDiff) {};

TEST(ReloadDiff, SameConfigNoChange) {
  CHECK_EQUAL(0u, proc::DiffConfig(Finished({}), Finished({})).size());
}

TEST(ReloadDiff, ReloadableAndRestartRowsAreTold) {
  Config a = Finished({"daemon.log_level=notice", "memory.arena_mb=64", "secrets.resp=old"});
  Config b = Finished({"daemon.log_level=debug", "memory.arena_mb=128", "secrets.resp=new",
                       "listen.resp_allow=10.0.0.0/8"});
  auto d = proc::DiffConfig(a, b);
  LONGS_EQUAL(4, d.size());
  const ConfigChange* ch = Find(d, "daemon.log_level");
  CHECK(ch && ch->reloads);
  STRCMP_EQUAL("notice", ch->from.c_str());
  STRCMP_EQUAL("debug", ch->to.c_str());
  ch = Find(d, "memory.arena_mb");
  CHECK(ch && !ch->reloads);
  STRCMP_EQUAL("64", ch->from.c_str());
  // A secret is counted, never shown.
  ch = Find(d, "secrets.resp");
  CHECK(ch && ch->reloads);
  STRCMP_EQUAL("1 set", ch->from.c_str());
  STRCMP_EQUAL("1 set (other values)", ch->to.c_str());
  ch = Find(d, "listen.resp_allow");
  CHECK(ch && ch->reloads);
  STRCMP_EQUAL("(empty)", ch->from.c_str());
}

TEST(ReloadDiff, CollectionsNeedARestart) {
  Config a = Finished({});
  Config b = Finished({"daemon.databases=2", "collection.0.buckets=4096"});
  auto d = proc::DiffConfig(a, b);
  const ConfigChange* ch = Find(d, "collection 0");
  CHECK(ch && !ch->reloads);
  STRCMP_CONTAINS("buckets 4096", ch->to.c_str());
  ch = Find(d, "collection 15");
  CHECK(ch && !ch->reloads);
  STRCMP_EQUAL("(removed)", ch->to.c_str());
  CHECK(Find(d, "daemon.databases") && !Find(d, "daemon.databases")->reloads);
}

TEST(ReloadDiff, ReloadableRowsAreExactlyTheDocumentedOnes) {
  // README.md "Reloading the configuration" lists these; test_systemd
  // checks the README against `perfcached -h`.
  std::string got;
  for (const auto& [k, v] : proc::ReloadableValues(Config())) got += k + " ";
  STRCMP_EQUAL("daemon.log_level daemon.allow_create daemon.growth_budget daemon.sweep_ms memory.maxmemory "
               "memory.maxmemory_policy memory.maxmemory_samples memory.maxmemory_eviction_tenacity memory.maxmemory_clients memory.lfu_log_factor memory.lfu_decay_time "
               "memory.automove memory.automove_buckets listen.resp_allow listen.http_hosts listen.timeout "
               "listen.proto_max_bulk_len listen.client_query_buffer_limit listen.client_output_buffer_limit "
               "secrets.resp secrets.http ",
               got.c_str());
}

TEST(ReloadDiff, CopyReloadableLeavesTheRestAlone) {
  Config live = Finished({"memory.arena_mb=64", "secrets.resp=a", "secrets.resp=b"});
  Config next = Finished({"memory.arena_mb=128", "secrets.resp=c", "listen.timeout=9"});
  proc::CopyReloadable(next, &live);
  LONGS_EQUAL(64, live.arena_mb);
  LONGS_EQUAL(1, live.resp_secrets.size());
  STRCMP_EQUAL("c", live.resp_secrets[0].c_str());
  LONGS_EQUAL(9, live.timeout);
}

TEST_GROUP(ReloadRecords) {};

TEST(ReloadRecords, RoundTrip) {
  std::vector<std::pair<std::string, std::string>> kv = {{"a.b", ""}, {"secrets.resp", std::string("x\0y\n", 4)}};
  std::string bytes = proc::EncodeReload(kv);
  std::vector<std::pair<std::string, std::string>> back;
  CHECK(proc::DecodeReload(bytes, &back));
  CHECK(back == kv);
  CHECK(proc::DecodeReload("", &back));
  CHECK(back.empty());
}

TEST(ReloadRecords, RefusesTruncatedAndOverlongRecords) {
  std::string bytes = proc::EncodeReload({{"daemon.log_level", "debug"}});
  std::vector<std::pair<std::string, std::string>> back;
  for (size_t cut = 1; cut < bytes.size(); ++cut) CHECK_FALSE(proc::DecodeReload(bytes.substr(0, cut), &back));
  std::string overlong = bytes;
  overlong[0] = '\x7f';  // key length past the end
  CHECK_FALSE(proc::DecodeReload(overlong, &back));
}

TEST(ReloadRecords, ApplyReplacesListsAndRefusesOtherRows) {
  Config live = Finished({"secrets.resp=old", "listen.resp_allow=10.0.0.0/8"});
  Config next = Finished({"secrets.resp=new", "secrets.resp=newer", "daemon.log_level=debug"});
  std::string err;
  CHECK_TRUE(proc::ApplyReloadBytes(Bytes(next), &live, &err));
  LONGS_EQUAL(2, live.resp_secrets.size());
  STRCMP_EQUAL("new", live.resp_secrets[0].c_str());
  CHECK(live.resp_allow.empty());  // replaced, not added to
  STRCMP_EQUAL("debug", live.log_level.c_str());
  // A row that does not reload, or a bad value: refused whole.
  Config before = live;
  CHECK_FALSE(proc::ApplyReloadBytes(proc::EncodeReload({{"listen.timeout", "7"}, {"memory.arena_mb", "512"}}),
                                     &live, &err));
  STRCMP_CONTAINS("memory.arena_mb: 'memory.arena_mb' is not a reloadable setting", err.c_str());
  LONGS_EQUAL(before.timeout, live.timeout);
  CHECK_FALSE(proc::ApplyReloadBytes(proc::EncodeReload({{"listen.timeout", "-1"}}), &live, &err));
  STRCMP_CONTAINS("listen.timeout: expected an integer", err.c_str());
  CHECK_FALSE(proc::ApplyReloadBytes("\x05", &live, &err));
  STRCMP_CONTAINS("do not decode", err.c_str());
}

TEST_GROUP(ReloadChannel) {
  std::unique_ptr<proc::ProcTable> pt;
  void setup() override { pt = std::make_unique<proc::ProcTable>(); }
  void teardown() override { pt.reset(); }
};

TEST(ReloadChannel, PublishFetchWipe) {
  proc::ReloadArea& r = pt->reload;
  std::string bytes;
  uint32_t gen = 0;
  CHECK(proc::FetchReload(r, 0, &bytes, &gen) == proc::ReloadFetch::kNothing);
  CHECK_EQUAL(1u, proc::PublishReload(r, "abc"));
  CHECK(proc::FetchReload(r, 0, &bytes, &gen) == proc::ReloadFetch::kNew);
  CHECK_EQUAL(1u, gen);
  STRCMP_EQUAL("abc", bytes.c_str());
  CHECK(proc::FetchReload(r, 1, &bytes, &gen) == proc::ReloadFetch::kNothing);
  proc::WipeReload(r);
  CHECK_EQUAL(1u, r.gen.load());
  CHECK_EQUAL(0u, r.len);
  CHECK_EQUAL(0, r.bytes[0]);
  // Mid-write (odd sequence): try again later.
  CHECK_EQUAL(2u, proc::PublishReload(r, "de"));
  r.seq.store(r.seq.load() + 1);
  CHECK(proc::FetchReload(r, 1, &bytes, &gen) == proc::ReloadFetch::kBusy);
  r.seq.store(r.seq.load() + 1);
  CHECK(proc::FetchReload(r, 1, &bytes, &gen) == proc::ReloadFetch::kNew);
  // Too big for the area: not published, the generation stays.
  CHECK_EQUAL(0u, proc::PublishReload(r, std::string(proc::kReloadBytes + 1, 'x')));
  CHECK_EQUAL(2u, r.gen.load());
}

TEST(ReloadChannel, ChildFollowsAndRecordsTheGeneration) {
  proc::ProcEntry& self = pt->e[2];
  Config cfg = Finished({"secrets.resp=old"});
  uint32_t seen = 0;
  CHECK_FALSE(proc::FollowLiveSettings(*pt, self, &cfg, &seen));
  Config next = Finished({"secrets.resp=new"});
  uint32_t gen = proc::PublishReload(pt->reload, Bytes(next));
  CHECK_TRUE(proc::FollowLiveSettings(*pt, self, &cfg, &seen));
  CHECK_EQUAL(gen, self.config_gen.load());
  STRCMP_EQUAL("new", cfg.resp_secrets[0].c_str());
  CHECK_FALSE(proc::FollowLiveSettings(*pt, self, &cfg, &seen));  // once
}
