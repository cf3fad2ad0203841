#include "idempay/signing/jose.hpp"

#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"

namespace idempay::signing {

namespace {

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int sextet(char c) {
  auto at = kAlphabet.find(c);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

void write_jwk_members(JsonWriter& w, const PublicKey& key) {
  w.key("kty").string("OKP").key("crv").string("Ed25519").key("x").string(base64url(key.raw));
  w.key("kid").string(key.kid).key("alg").string("EdDSA").key("use").string("sig");
}

}  // namespace

std::string base64url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  size_t i = 0;
  auto byte = [&](size_t at) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[at])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift : {18, 12, 6, 0}) {
      out += kAlphabet[(n >> shift) & 63];
    }
  }
  if (size_t rest = bytes.size() - i; rest > 0) {
    uint32_t n = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    if (rest == 2) {
      out += kAlphabet[(n >> 6) & 63];
    }
  }
  return out;
}

Result<std::string> from_base64url(std::string_view text) {
  if (text.size() % 4 == 1) {
    return make_error(ErrorCode::kInvalidArgument, "not base64url: a length no encoding has");
  }
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t n = 0;
  int bits = 0;
  for (char c : text) {
    int v = sextet(c);
    if (v < 0) {
      return make_error(ErrorCode::kInvalidArgument, "not base64url: a character outside its alphabet");
    }
    n = (n << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((n >> bits) & 0xff);
    }
  }
  if ((n & ((1u << bits) - 1)) != 0) {
    return make_error(ErrorCode::kInvalidArgument, "not base64url: stray bits in its last character");
  }
  return out;
}

std::string jwk_thumbprint(std::string_view raw_public_key) {
  // RFC 7638 section 3.2: the required members only, in lexicographic order, no whitespace.
  std::string canonical = R"({"crv":"Ed25519","kty":"OKP","x":")" + base64url(raw_public_key) + "\"}";
  auto digest = crypto::sha256(canonical);
  return base64url(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string jwk_json(const PublicKey& key) {
  JsonWriter w;
  w.begin_object();
  write_jwk_members(w, key);
  w.end_object();
  return std::move(w).take();
}

std::string jwk_set_json(const std::vector<PublicKey>& keys) {
  JsonWriter w;
  w.begin_object().key("keys").begin_array();
  for (const auto& key : keys) {
    w.begin_object();
    write_jwk_members(w, key);
    w.end_object();
  }
  w.end_array().end_object();
  return std::move(w).take();
}

std::string sign_compact(const SigningKey& key, std::string_view typ, std::string_view payload) {
  JsonWriter header;
  header.begin_object().key("alg").string("EdDSA").key("kid").string(key.public_key().kid).key("typ").string(typ);
  header.end_object();
  std::string input = base64url(header.str()) + "." + base64url(payload);
  std::string signature = key.sign(input);
  return input + "." + base64url(signature);
}

Result<CompactJws> parse_compact(std::string_view jws) {
  auto first = jws.find('.');
  auto second = first == std::string_view::npos ? first : jws.find('.', first + 1);
  if (second == std::string_view::npos || jws.find('.', second + 1) != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidArgument, "a compact JWS has three parts separated by dots");
  }
  CompactJws out;
  auto header = from_base64url(jws.substr(0, first));
  auto payload = from_base64url(jws.substr(first + 1, second - first - 1));
  auto signature = from_base64url(jws.substr(second + 1));
  if (!header || !payload || !signature) {
    return make_error(ErrorCode::kInvalidArgument, "a part of the JWS is not base64url");
  }
  auto parsed = JsonValue::parse(*header);
  if (!parsed || parsed->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInvalidArgument, "the JWS header is not a JSON object");
  }
  out.alg = parsed->string_or("alg");
  out.kid = parsed->string_or("kid");
  out.typ = parsed->string_or("typ");
  out.header = std::move(*header);
  out.payload = std::move(*payload);
  out.signature = std::move(*signature);
  out.signing_input = std::string(jws.substr(0, second));
  return out;
}

bool verify_compact(const CompactJws& jws, const PublicKey& key) {
  return jws.alg == "EdDSA" && verify(key, jws.signing_input, jws.signature);
}

}  // namespace idempay::signing
