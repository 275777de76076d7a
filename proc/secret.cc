// perfcached — secrets: constant-time comparison (libsodium), wiping, masking for display.
// Copyright (c) 2026 the perfcached authors.
#include "proc/secret.h"

#include <sodium.h>

#include <cstring>

namespace proc {
namespace {

unsigned char g_key[crypto_generichash_KEYBYTES];
bool g_ready = false;

void Digest(std::string_view s, unsigned char* out) {
  crypto_generichash(out, crypto_generichash_BYTES, reinterpret_cast<const unsigned char*>(s.data()),
                     s.size(), g_key, sizeof g_key);
}

// Where the value of a secret override starts in `arg`, or npos.
size_t SecretValueAt(std::string_view arg) {
  size_t at = arg.find("secrets.");
  if (at == std::string_view::npos) return std::string_view::npos;
  // "-o" joined ("-osecrets.x=v") or the word itself ("secrets.x=v").
  if (at != 0 && !(at == 2 && arg.substr(0, 2) == "-o")) return std::string_view::npos;
  size_t eq = arg.find('=', at);
  return eq == std::string_view::npos ? std::string_view::npos : eq + 1;
}

}  // namespace

bool SecretsInit() {
  if (g_ready) return true;
  if (sodium_init() < 0) return false;
  crypto_generichash_keygen(g_key);
  g_ready = true;
  return true;
}

bool SecretMatches(const std::vector<std::string>& secrets, std::string_view candidate) {
  if (!g_ready && !SecretsInit()) return false;
  unsigned char want[crypto_generichash_BYTES], got[crypto_generichash_BYTES];
  Digest(candidate, got);
  int ok = 0;
  for (const auto& s : secrets) {
    Digest(s, want);
    ok |= sodium_memcmp(want, got, sizeof got) == 0;
  }
  sodium_memzero(want, sizeof want);
  sodium_memzero(got, sizeof got);
  return ok != 0;
}

void Wipe(void* p, size_t n) {
  if (p && n) sodium_memzero(p, n);
}

std::string MaskSecretArg(std::string_view arg) {
  size_t v = SecretValueAt(arg);
  if (v == std::string_view::npos) return std::string(arg);
  return std::string(arg.substr(0, v)) + "********";
}

int ScrubArgv(int argc, char** argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    size_t v = SecretValueAt(argv[i]);
    if (v == std::string_view::npos) continue;
    // Same length, so /proc/PID/cmdline keeps its layout; the bytes are gone.
    std::memset(argv[i] + v, '*', std::strlen(argv[i] + v));
    ++n;
  }
  return n;
}

}  // namespace proc
