// perfcached — secrets: constant-time comparison (libsodium), wiping, masking for display.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Every secret the daemon checks (AUTH passwords, HTTP bearer tokens) goes
// through SecretMatches(): both sides are hashed with a keyed BLAKE2b
// (crypto_generichash, a random key made at start) and the digests compared
// with sodium_memcmp, so neither the content nor the length of a secret
// leaks through timing. Every configured secret is compared (rotation: any
// may match), with no early exit.

#include <string>
#include <string_view>
#include <vector>

namespace proc {

// sodium_init() and the comparison key; call once before forking. False
// when libsodium cannot start (the daemon refuses to run).
bool SecretsInit();
bool SecretMatches(const std::vector<std::string>& secrets, std::string_view candidate);
// Overwrite bytes that held a secret (sodium_memzero: not optimised away).
void Wipe(void* p, size_t n);
// "-o secrets.resp=pw" / "secrets.resp=pw" -> "...=********"; other text unchanged.
std::string MaskSecretArg(std::string_view arg);
// Overwrite, in place, the values of secret overrides in the process's own
// argv (what ps and /proc/PID/cmdline show). Returns how many were masked.
int ScrubArgv(int argc, char** argv);

}  // namespace proc
