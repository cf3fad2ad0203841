#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"

namespace idempay::http {

/// Who may call: merchants by name, each with one AppKey and one or more AppTokens (several
/// while a token is rotated). Tokens are kept only as SHA-256 digests and compared in
/// constant time. An entry may be limited to the gateway's homologation suite: it then
/// authenticates only requests that say they come from the suite, and its key and token may
/// be empty (the suite's mode without credentials).
class Credentials {
public:
  using Digest = std::array<uint8_t, 32>;

  /// Adds a merchant. kInvalidArgument for an empty name, an empty key or token (unless
  /// `test_suite_only`), a name or appKey already present, or no token at all.
  Status add(std::string name, std::string app_key, const std::vector<std::string>& app_tokens,
             bool test_suite_only = false);
  /// The same with tokens given as hex SHA-256 digests (64 hex digits each).
  Status add_hashed(std::string name, std::string app_key, const std::vector<std::string>& token_sha256_hex,
                    bool test_suite_only = false);

  /// The merchant's name when key and token match, empty otherwise; entries limited to the
  /// homologation suite match only when `from_test_suite`. The time taken does not depend on
  /// how much of the token matched, nor on which keys exist.
  std::string authenticate(std::string_view app_key, std::string_view app_token, bool from_test_suite = false) const;

  /// The name of the entry holding `token`, whatever its key, empty if none does: for bearer
  /// tokens (operators), whose entries are keyed by name. Constant time as above; entries
  /// limited to the homologation suite never match.
  std::string authenticate_bearer(std::string_view token) const;

  size_t size() const { return merchants_.size(); }
  /// Merchant names in the order they were added.
  std::vector<std::string> names() const;

private:
  struct Merchant {
    std::string name;
    std::string app_key;
    std::vector<Digest> token_sha256;
    bool test_suite_only = false;
  };
  Status add_digests(std::string name, std::string app_key, std::vector<Digest> digests, bool test_suite_only);
  std::vector<Merchant> merchants_;
};

}  // namespace idempay::http
