#pragma once
// The console's files (admin/console/), compiled in: the connector serves them itself and
// nothing is fetched from anywhere else.
#include <optional>
#include <string_view>

namespace idempay::admin {

struct ConsoleFile {
  std::string_view body;
  std::string_view content_type;
};

/// The file served at `path` (/admin/, /admin/console.js, /admin/console.css, and the receipt
/// verification page /receipts/verify and its script), if any.
std::optional<ConsoleFile> console_file(std::string_view path);

}  // namespace idempay::admin
