// perfcached — libFuzzer target for what `perfcached --restore` and `--dump`
// read from outside: backup chunk files, the manifest (db/backup.h), and a
// server's RESP replies (net/resp_client.h).
// Copyright (c) 2026 the perfcached authors.
//
// Byte 0 chooses the reader: 0 a chunk file as it is; 1 the rest as a
// chunk's raw records, sealed in a good chunk (so the record reader is
// reached past the checksums); 2 a manifest; 3 a stream of replies. Each
// must answer, never crash or read out of bounds (ASan); what is accepted
// must survive its writer: a decoded chunk re-encodes to the same records,
// a parsed manifest formats and parses to the same chunks.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "db/backup.h"
#include "net/resp_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string err;
  switch (data[0] & 3) {
    case 0:
    case 1: {
      db::BackupChunkInfo info;
      std::string file = in;
      if (data[0] & 1) file = db::EncodeBackupChunk(1, in.size() / 10 + 1 > 3 ? 3 : 1, in, &info);
      std::vector<db::BackupRecord> recs;
      if (!db::DecodeBackupChunk(file, &info, &recs, &err)) return 0;
      std::string raw;
      for (const auto& r : recs) db::AppendBackupRecord(&raw, r.key, r.expire_ms, r.payload);
      db::BackupChunkInfo again;
      std::vector<db::BackupRecord> back;
      if (!db::DecodeBackupChunk(db::EncodeBackupChunk(info.db, recs.size(), raw, &again), &again, &back, &err) ||
          back.size() != recs.size()) {
        abort();
      }
      for (size_t k = 0; k < recs.size(); ++k) {
        if (back[k].key != recs[k].key || back[k].payload != recs[k].payload || back[k].expire_ms != recs[k].expire_ms)
          abort();
      }
      return 0;
    }
    case 2: {
      db::BackupManifest m, back;
      if (!db::ParseBackupManifest(in, &m, &err)) return 0;
      if (!db::ParseBackupManifest(db::FormatBackupManifest(m), &back, &err)) abort();
      if (back.chunks.size() != m.chunks.size() || back.complete != m.complete || back.failed != m.failed) abort();
      for (size_t k = 0; k < m.chunks.size(); ++k) {
        if (back.chunks[k].name != m.chunks[k].name || back.chunks[k].info.crc != m.chunks[k].info.crc) abort();
      }
      return 0;
    }
    default: {
      size_t pos = 0;
      for (int n = 0; n < 64; ++n) {
        net::Reply r;
        size_t before = pos;
        net::ParseResult res = net::ParseReply(in, &pos, &r, &err, 1 << 16);
        if (res != net::ParseResult::kOk) {
          if (pos != before) abort();  // a refusal or "more" consumes nothing
          break;
        }
        if (pos <= before || pos > in.size()) abort();
      }
      return 0;
    }
  }
}
