#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace idempay::testing {

/// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "idempay-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

}  // namespace idempay::testing
