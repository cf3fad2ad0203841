#pragma once
// Files only the service's own user may read: the data directory and the secrets in it.
#include <string>

#include "idempay/base/error.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay {

/// Creates `dir` (and its parents) if missing and makes it mode 0700.
Status ensure_private_directory(const std::string& dir);

/// Writes `content` to `path` atomically with mode 0600 from the first byte: a temporary file
/// created exclusively, written, synced, then renamed over `path` and the directory synced.
/// Every step's error is returned; nothing is left half-written under `path`.
Status write_private_file(const std::string& path, const std::string& content);

/// The secret kept in `path`, created with `generate()`'s value on first use. Whitespace
/// around it is ignored.
template <class Generate>
Result<std::string> read_or_create_secret(const std::string& path, Generate generate);

/// The file's content, or kNotFound if it does not exist.
Result<std::string> read_text_file(const std::string& path);

/// A secret kept in a file: its content without the final line break(s); kNotFound if the
/// file does not exist.
Result<std::string> read_secret_file(const std::string& path);

/// The file's content as JSON; a parse error is kInvalidArgument prefixed with the path.
Result<JsonValue> read_json_file(const std::string& path);

template <class Generate>
Result<std::string> read_or_create_secret(const std::string& path, Generate generate) {
  auto existing = read_text_file(path);
  if (existing) {
    auto first = existing->find_first_not_of(" \t\r\n");
    auto last = existing->find_last_not_of(" \t\r\n");
    if (first != std::string::npos) {
      return existing->substr(first, last - first + 1);
    }
  } else if (existing.error().code != ErrorCode::kNotFound) {
    return existing;
  }
  std::string secret = generate();
  if (auto s = write_private_file(path, secret + "\n"); !s) {
    return tl::unexpected(s.error());
  }
  return secret;
}

}  // namespace idempay
