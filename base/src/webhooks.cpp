#include "idempay/base/webhooks.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "idempay/base/crypto.hpp"

namespace idempay::webhooks {

namespace {
constexpr std::string_view kSecretPrefix = "whsec_";

Status unauthenticated() { return make_error(ErrorCode::kUnauthenticated, "invalid webhook signature"); }
}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return make_error(ErrorCode::kInvalidArgument, "invalid base64");
  }
  std::string out(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) {
    return make_error(ErrorCode::kInvalidArgument, "invalid base64");
  }
  // EVP_DecodeBlock counts the padding as zero bytes; drop them. Padding is at most two
  // characters, at the very end ("I=======" has more than it decodes to: found by fuzz_webhook).
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) {
    ++padding;
  }
  if (padding > 2 || padding > static_cast<size_t>(n)) {
    return make_error(ErrorCode::kInvalidArgument, "invalid base64");
  }
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

Result<std::string> decode_secret(std::string_view whsec) {
  if (whsec.substr(0, kSecretPrefix.size()) == kSecretPrefix) {
    whsec.remove_prefix(kSecretPrefix.size());
  }
  auto key = base64_decode(whsec);
  if (!key || key->size() < 24 || key->size() > 64) {
    return make_error(ErrorCode::kInvalidArgument, "a webhook secret is whsec_ + base64 of 24-64 bytes");
  }
  return key;
}

std::string generate_secret() { return std::string(kSecretPrefix) + base64_encode(crypto::random_bytes(32)); }

std::string sign(std::string_view key, std::string_view id, int64_t timestamp, std::string_view body) {
  std::string content;
  content.reserve(id.size() + body.size() + 24);
  content.append(id).append(".").append(std::to_string(timestamp)).append(".").append(body);
  auto mac = crypto::hmac_sha256(key, content);
  return "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));
}

Status verify(const std::vector<std::string>& keys, std::string_view id, std::string_view timestamp,
              std::string_view signatures, std::string_view body, int64_t now, int64_t tolerance_seconds) {
  if (id.empty() || timestamp.empty() || timestamp.size() > 12 || signatures.empty()) {
    return unauthenticated();
  }
  int64_t ts = 0;
  for (char c : timestamp) {
    if (c < '0' || c > '9') {
      return unauthenticated();
    }
    ts = ts * 10 + (c - '0');
  }
  if (ts < now - tolerance_seconds || ts > now + tolerance_seconds) {
    return unauthenticated();
  }
  bool matched = false;
  for (const auto& key : keys) {
    std::string expected = sign(key, id, ts, body);
    size_t pos = 0;
    while (pos < signatures.size()) {
      size_t end = signatures.find(' ', pos);
      std::string_view candidate = signatures.substr(pos, end == std::string_view::npos ? end : end - pos);
      // Only the v1 scheme counts; other schemes are ignored, never a downgrade.
      if (candidate.size() == expected.size() &&
          CRYPTO_memcmp(candidate.data(), expected.data(), expected.size()) == 0) {
        matched = true;
      }
      pos = end == std::string_view::npos ? signatures.size() : end + 1;
    }
  }
  return matched ? Status{} : unauthenticated();
}

}  // namespace idempay::webhooks
