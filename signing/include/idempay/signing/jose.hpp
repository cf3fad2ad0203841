#pragma once
// The JOSE forms of Ed25519 (RFC 8037): public keys as JWKs (kty OKP, crv Ed25519) gathered
// in a JWK Set, signatures as compact JWS with alg EdDSA — what any JOSE library checks.
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/signing/ed25519.hpp"

namespace idempay::signing {

/// base64url without padding (RFC 7515 section 2).
std::string base64url(std::string_view bytes);
/// Its inverse; kInvalidArgument for padding or any character outside the alphabet.
Result<std::string> from_base64url(std::string_view text);

/// RFC 7638's thumbprint of an Ed25519 JWK: base64url(SHA-256 of {"crv","kty","x"} in order).
std::string jwk_thumbprint(std::string_view raw_public_key);

/// One key as a JWK, with its kid, "alg":"EdDSA" and "use":"sig".
std::string jwk_json(const PublicKey& key);
/// {"keys":[...]}: the keys in the order given.
std::string jwk_set_json(const std::vector<PublicKey>& keys);

/// A compact JWS over `payload` (the bytes as given) with the protected header
/// {"alg":"EdDSA","kid":...,"typ":`typ`}.
std::string sign_compact(const SigningKey& key, std::string_view typ, std::string_view payload);

/// A compact JWS taken apart (nothing verified yet).
struct CompactJws {
  std::string header;    ///< the protected header's JSON
  std::string payload;   ///< the payload's bytes
  std::string signing_input;  ///< base64url(header) "." base64url(payload): what was signed
  std::string signature;
  std::string alg;
  std::string kid;
  std::string typ;
};
/// kInvalidArgument, saying what is wrong, for anything but three base64url parts whose
/// header is a JSON object.
Result<CompactJws> parse_compact(std::string_view jws);

/// True if `jws` is EdDSA and its signature verifies under `key`.
bool verify_compact(const CompactJws& jws, const PublicKey& key);

}  // namespace idempay::signing
