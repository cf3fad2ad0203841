#include "store_access.hpp"

#include <filesystem>
#include <iostream>

#include "idempay/config/store_location.hpp"

namespace idempay::cli {

void add_store_options(CLI::App& command, StoreOptions& options) {
  command.add_option("--data-dir", options.data_dir, "the connector's data directory")->capture_default_str();
  command.add_option("--store", options.store, "the store, if not DATA_DIR/rocksdb (as for serve)")
      ->envname("IDEMPAY_STORE");
}

std::string without_query(const std::string& url) {
  return visible(url.substr(0, url.find('?')));
}

Result<std::unique_ptr<storage::Store>> open_for_operator(const StoreOptions& where, bool write) {
  // Read-only opens work on a running connector's store too.
  auto at = config::parse_store_location(where.store, where.data_dir);
  if (!at) {
    return tl::unexpected(at.error());
  }
  if (at->kind == config::StoreLocation::Kind::kRocks && !std::filesystem::exists(at->where)) {
    return make_error(ErrorCode::kNotFound, "no store at " + at->where);
  }
  auto opened = config::open_store_at(*at, !write);
  if (!opened) {
    return make_error(ErrorCode::kUnavailable,
                      opened.error().message + " (is the connector still running on this store?)");
  }
  return opened;
}

int failed(const Error& error, int code) {
  std::cerr << error.message << "\n";
  return code;
}

}  // namespace idempay::cli
