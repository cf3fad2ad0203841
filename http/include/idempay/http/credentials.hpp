#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/protocol/error.hpp"

namespace idempay::http {

/// Merchant AppKey/AppToken pairs. Tokens are kept only as SHA-256 digests and compared in
/// constant time.
class Credentials {
public:
  /// Loads `{"merchants":[{"name":..,"appKey":..,"appToken":..|"appTokenSha256":..}]}`.
  static Result<Credentials> load_file(const std::string& path);

  void add(std::string name, std::string app_key, std::string_view app_token);
  Status add_hashed(std::string name, std::string app_key, std::string_view token_sha256_hex);

  /// The merchant name when key and token match, empty otherwise. The time taken does not
  /// depend on how much of the token matched.
  std::string authenticate(std::string_view app_key, std::string_view app_token) const;

  size_t size() const { return merchants_.size(); }

private:
  struct Merchant {
    std::string name;
    std::string app_key;
    std::array<uint8_t, 32> token_sha256{};
  };
  std::vector<Merchant> merchants_;
};

}  // namespace idempay::http
