#pragma once
// Ed25519 signing keys (RFC 8032) as OpenSSL 3 does them. A private key lives in a PEM file
// (PKCS #8) that only the service's user may read; its public half is named by the RFC 7638
// thumbprint of its JWK, the key id every signature carries.
#include <memory>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"

namespace idempay::signing {

/// An Ed25519 public key: its 32 raw bytes and its key id.
struct PublicKey {
  std::string raw;
  std::string kid;
};

/// The public key of those 32 raw bytes; kInvalidArgument for any other length.
Result<PublicKey> public_key_from_raw(std::string_view raw);

/// True if `signature` (64 bytes) is `key`'s Ed25519 signature of `data`.
bool verify(const PublicKey& key, std::string_view data, std::string_view signature);

/// A private key, shareable between threads (signing allocates its own context each time).
class SigningKey {
public:
  /// Reads a PEM private key. Refused (kInvalidArgument, the reason named) if the file can be
  /// read by its group or others, or holds anything but an Ed25519 key.
  static Result<SigningKey> load(const std::string& path);
  /// A new random key, written to `path` (mode 0600, atomically); kAlreadyExists if present.
  static Result<SigningKey> generate(const std::string& path);
  /// `load(path)`, or `generate(path)` if there is no such file.
  static Result<SigningKey> load_or_generate(const std::string& path);

  const PublicKey& public_key() const { return public_; }
  /// The 64-byte signature of `data`; throws std::runtime_error if OpenSSL fails.
  std::string sign(std::string_view data) const;

private:
  struct Pkey;
  SigningKey(std::shared_ptr<Pkey> key, PublicKey pub) : key_(std::move(key)), public_(std::move(pub)) {}
  std::shared_ptr<Pkey> key_;
  PublicKey public_;
};

}  // namespace idempay::signing
