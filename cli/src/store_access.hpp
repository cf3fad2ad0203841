#pragma once
// What the operator tools share: opening a connector's store, and printing what it holds.
#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "idempay/base/error.hpp"
#include "idempay/base/visible_text.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::cli {

/// Where a tool finds the store: `--data-dir DIR` (its rocksdb/) or `--store URI`.
struct StoreOptions {
  std::string data_dir = "./data";
  std::string store;
};
void add_store_options(CLI::App& command, StoreOptions& options);

/// The store, read-only unless `write` (which needs the connector stopped); a missing RocksDB
/// directory is kNotFound.
Result<std::unique_ptr<storage::Store>> open_for_operator(const StoreOptions& where, bool write = false);

/// A callback URL without its query (which carries the gateway's signature), made visible
/// (visible_text.hpp): stored strings come from outside and must not drive the terminal.
std::string without_query(const std::string& url);

/// Prints `error`'s message on stderr; returns `code` (for `return failed(...)`).
int failed(const Error& error, int code = 1);

}  // namespace idempay::cli
