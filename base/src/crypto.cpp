#include "idempay/base/crypto.hpp"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rand.h>

namespace idempay::crypto {

namespace {
// OpenSSL 3 looks an algorithm up by name on every one-shot call that is given a legacy
// EVP_sha256() (a locked property query each time); fetched once, the lookup is gone.
// Both objects live for the whole process.
const EVP_MD* sha256_md() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

EVP_MAC* hmac_mac() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

// HMAC contexts already keyed, a few per thread. EVP_MAC_init looks the digest up by name
// and hashes the key's pads on every call; a copy of a keyed context does neither, which
// halves the cost of a request fingerprint. Keys are the service's own secrets (fingerprint
// key, webhook and callback secrets): few, and already in memory.
class KeyedHmacs {
public:
  KeyedHmacs() = default;
  KeyedHmacs(const KeyedHmacs&) = delete;
  KeyedHmacs& operator=(const KeyedHmacs&) = delete;
  ~KeyedHmacs() {
    for (auto& keyed : keyed_) {
      forget(keyed);
    }
  }

  // A fresh context for `key`, ready for updates; the caller frees it. Null on failure.
  EVP_MAC_CTX* start(std::string_view key) {
    for (auto& [known, ctx] : keyed_) {
      if (known == key) {
        return EVP_MAC_CTX_dup(ctx);
      }
    }
    EVP_MAC_CTX* ctx = new_keyed(key);
    if (ctx == nullptr) {
      return nullptr;
    }
    if (keyed_.size() == kMaxKeys) {  // rotation: forget the oldest key
      forget(keyed_.front());
      keyed_.erase(keyed_.begin());
    }
    keyed_.emplace_back(std::string(key), ctx);
    return EVP_MAC_CTX_dup(ctx);
  }

private:
  using Keyed = std::pair<std::string, EVP_MAC_CTX*>;
  static constexpr size_t kMaxKeys = 8;

  static void forget(Keyed& keyed) {
    OPENSSL_cleanse(keyed.first.data(), keyed.first.size());
    EVP_MAC_CTX_free(keyed.second);
  }

  static EVP_MAC_CTX* new_keyed(std::string_view key) {
    char digest_name[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest_name, 0), OSSL_PARAM_construct_end()};
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(hmac_mac());
    if (ctx != nullptr &&
        EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) != 1) {
      EVP_MAC_CTX_free(ctx);
      return nullptr;
    }
    return ctx;
  }

  std::vector<Keyed> keyed_;
};
}  // namespace

Digest hmac_sha256(std::string_view key, std::string_view data) {
  thread_local KeyedHmacs keyed;
  Digest out{};
  size_t len = 0;
  EVP_MAC_CTX* ctx = keyed.start(key);
  bool ok = ctx != nullptr &&
            EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1 &&
            EVP_MAC_final(ctx, out.data(), &len, out.size()) == 1;
  EVP_MAC_CTX_free(ctx);
  if (!ok || len != out.size()) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return out;
}

Digest sha256(std::string_view data) {
  Digest out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, sha256_md(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  return out;
}

std::string to_hex(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}
}  // namespace

bool digest_from_hex(std::string_view hex, Digest& out) {
  if (hex.size() != out.size() * 2) {
    return false;
  }
  // No early exit inside the loop: the time taken does not depend on where a bad digit is.
  bool ok = true;
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = hex_value(hex[2 * i]);
    int lo = hex_value(hex[2 * i + 1]);
    ok &= hi >= 0 && lo >= 0;
    out[i] = static_cast<uint8_t>(((hi & 0xf) << 4) | (lo & 0xf));
  }
  return ok;
}

bool constant_time_equal(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

// AES-256-GCM in one direction; false on any failure (a wrong key or tag when decrypting).
bool aes_gcm(bool encrypt, std::string_view key, std::string_view nonce, std::string_view in, std::string& out,
             unsigned char* tag) {
  if (key.size() != 32) {
    return false;
  }
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  auto* k = reinterpret_cast<const unsigned char*>(key.data());
  auto* iv = reinterpret_cast<const unsigned char*>(nonce.data());
  out.assign(in.size(), '\0');
  int n = 0;
  bool ok = ctx != nullptr && EVP_CipherInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, k, iv, encrypt ? 1 : 0) == 1;
  ok = ok && EVP_CipherUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &n,
                              reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size())) == 1;
  if (ok && !encrypt) {
    ok = EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag) == 1;
  }
  unsigned char last[16];
  ok = ok && EVP_CipherFinal_ex(ctx.get(), last, &n) == 1;
  if (ok && encrypt) {
    ok = EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, tag) == 1;
  }
  return ok;
}

}  // namespace

std::string seal(std::string_view key, std::string_view plain) {
  std::string nonce = random_bytes(kNonceBytes);
  std::string cipher;
  unsigned char tag[kTagBytes];
  if (!aes_gcm(true, key, nonce, plain, cipher, tag)) {
    throw std::runtime_error("AES-256-GCM failed");
  }
  return nonce + cipher + std::string(reinterpret_cast<const char*>(tag), kTagBytes);
}

std::optional<std::string> unseal(std::string_view key, std::string_view sealed) {
  if (sealed.size() < kNonceBytes + kTagBytes) {
    return std::nullopt;
  }
  std::string_view nonce = sealed.substr(0, kNonceBytes);
  std::string_view cipher = sealed.substr(kNonceBytes, sealed.size() - kNonceBytes - kTagBytes);
  unsigned char tag[kTagBytes];
  std::memcpy(tag, sealed.data() + sealed.size() - kTagBytes, kTagBytes);
  std::string plain;
  if (!aes_gcm(false, key, nonce, cipher, plain, tag)) {
    return std::nullopt;
  }
  return plain;
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return out;
}

}  // namespace idempay::crypto
