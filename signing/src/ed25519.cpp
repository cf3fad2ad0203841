#include "idempay/signing/ed25519.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "idempay/base/private_files.hpp"
#include "idempay/signing/jose.hpp"

namespace idempay::signing {

struct SigningKey::Pkey {
  EVP_PKEY* key;
  explicit Pkey(EVP_PKEY* k) : key(k) {}
  ~Pkey() { EVP_PKEY_free(key); }
  Pkey(const Pkey&) = delete;
  Pkey& operator=(const Pkey&) = delete;
};

namespace {

constexpr size_t kRawKeySize = 32;
constexpr size_t kSignatureSize = 64;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

Result<PublicKey> public_half(EVP_PKEY* key) {
  unsigned char raw[kRawKeySize];
  size_t size = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(key, raw, &size) != 1 || size != kRawKeySize) {
    return make_error(ErrorCode::kInternal, "the Ed25519 key's public half cannot be read");
  }
  return public_key_from_raw(std::string_view(reinterpret_cast<const char*>(raw), size));
}

std::string pem_of(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error("an Ed25519 key cannot be written as PEM");
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

Result<PublicKey> public_key_from_raw(std::string_view raw) {
  if (raw.size() != kRawKeySize) {
    return make_error(ErrorCode::kInvalidArgument, "an Ed25519 public key is 32 bytes");
  }
  return PublicKey{std::string(raw), jwk_thumbprint(raw)};
}

bool verify(const PublicKey& key, std::string_view data, std::string_view signature) {
  if (key.raw.size() != kRawKeySize || signature.size() != kSignatureSize) {
    return false;
  }
  PkeyPtr pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                           reinterpret_cast<const unsigned char*>(key.raw.data()), key.raw.size()));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!pkey || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) {
    return false;
  }
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
}

Result<SigningKey> SigningKey::load(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
                      path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      path + " can be read by others than its owner (chmod 600 it): a signing key must be private");
  }
  auto pem = read_text_file(path);
  if (!pem) {
    return tl::unexpected(pem.error());
  }
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size())));
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    return make_error(ErrorCode::kInvalidArgument, path + " holds no PEM private key");
  }
  if (!EVP_PKEY_is_a(key.get(), "ED25519")) {
    return make_error(ErrorCode::kInvalidArgument, path + " holds a key that is not Ed25519");
  }
  auto pub = public_half(key.get());
  if (!pub) {
    return tl::unexpected(pub.error());
  }
  return SigningKey(std::make_shared<Pkey>(key.release()), std::move(*pub));
}

Result<SigningKey> SigningKey::generate(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    return make_error(ErrorCode::kConflict, path + " exists already: a key is never overwritten");
  }
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!key) {
    return make_error(ErrorCode::kInternal, "no Ed25519 key could be generated");
  }
  if (auto written = write_private_file(path, pem_of(key.get())); !written) {
    return tl::unexpected(written.error());
  }
  auto pub = public_half(key.get());
  if (!pub) {
    return tl::unexpected(pub.error());
  }
  return SigningKey(std::make_shared<Pkey>(key.release()), std::move(*pub));
}

Result<SigningKey> SigningKey::load_or_generate(const std::string& path) {
  auto loaded = load(path);
  if (!loaded && loaded.error().code == ErrorCode::kNotFound) {
    return generate(path);
  }
  return loaded;
}

std::string SigningKey::sign(std::string_view data) const {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  std::string signature(kSignatureSize, '\0');
  size_t size = signature.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_->key) != 1
      || EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                        reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1
      || size != kSignatureSize) {
    throw std::runtime_error("Ed25519 signing failed");
  }
  return signature;
}

}  // namespace idempay::signing
