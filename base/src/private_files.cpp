#include "idempay/base/private_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "idempay/base/crypto.hpp"

namespace idempay {

namespace {
Error os_error(const std::string& what, const std::string& path) {
  return Error{ErrorCode::kUnavailable, what + " " + path + ": " + std::strerror(errno)};
}

Status sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return tl::unexpected(os_error("cannot open", dir));
  }
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) {
    return tl::unexpected(os_error("cannot sync", dir));
  }
  return {};
}
}  // namespace

Status ensure_private_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return make_error(ErrorCode::kUnavailable, "cannot create " + dir + ": " + ec.message());
  }
  if (::chmod(dir.c_str(), 0700) != 0) {
    return tl::unexpected(os_error("cannot restrict", dir));
  }
  return {};
}

Status write_private_file(const std::string& path, const std::string& content) {
  std::filesystem::path target(path);
  std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  std::string temp = path + ".tmp-" + crypto::to_hex(reinterpret_cast<const uint8_t*>(crypto::random_bytes(6).data()), 6);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return tl::unexpected(os_error("cannot create", temp));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      auto e = os_error("cannot write", temp);
      ::close(fd);
      ::unlink(temp.c_str());
      return tl::unexpected(e);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    auto e = os_error("cannot sync", temp);
    ::unlink(temp.c_str());
    return tl::unexpected(e);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    auto e = os_error("cannot rename into", path);
    ::unlink(temp.c_str());
    return tl::unexpected(e);
  }
  return sync_directory(dir);
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) {
      return make_error(ErrorCode::kNotFound, path + " does not exist");
    }
    return make_error(ErrorCode::kUnavailable, "cannot read " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<std::string> read_secret_file(const std::string& path) {
  auto text = read_text_file(path);
  while (text && !text->empty() && (text->back() == '\n' || text->back() == '\r')) {
    text->pop_back();
  }
  return text;
}

Result<JsonValue> read_json_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) {
    return tl::unexpected(text.error());
  }
  auto doc = JsonValue::parse(*text);
  if (!doc) {
    return make_error(ErrorCode::kInvalidArgument, path + ": " + doc.error().message);
  }
  return doc;
}

}  // namespace idempay
