#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idempay::crypto {

using Digest = std::array<uint8_t, 32>;

/// HMAC-SHA256 of `data` under `key` (OpenSSL EVP_MAC).
Digest hmac_sha256(std::string_view key, std::string_view data);

/// SHA-256 of `data`.
Digest sha256(std::string_view data);

/// Lower-case hex of a byte string.
std::string to_hex(const uint8_t* data, size_t size);
inline std::string to_hex(const Digest& d) { return to_hex(d.data(), d.size()); }

/// Decodes lower- or upper-case hex of exactly 64 characters; false on any bad input.
bool digest_from_hex(std::string_view hex, Digest& out);

/// Compares two equally long byte ranges in constant time.
bool constant_time_equal(const Digest& a, const Digest& b);

/// `plain` encrypted and authenticated under the 32-byte `key` (AES-256-GCM with a random
/// 12-byte nonce): the nonce, the ciphertext and the 16-byte tag. For tokens the service hands
/// out and must get back unaltered and unread (the operator API's cursors).
std::string seal(std::string_view key, std::string_view plain);

/// The plaintext of a sealed value; nullopt if it was not sealed under `key` or was altered.
std::optional<std::string> unseal(std::string_view key, std::string_view sealed);

/// `n` cryptographically random bytes (RAND_bytes); throws std::runtime_error on failure.
std::string random_bytes(size_t n);

}  // namespace idempay::crypto
