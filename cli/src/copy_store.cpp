// `idempay copy-store --from URI --to URI`: every key of a stopped connector's store into an
// empty one (moving an installation from RocksDB to PostgreSQL).
#include <iostream>

#include "idempay/cli/commands.hpp"
#include "idempay/config/store_location.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/stored_form.hpp"

namespace idempay::cli {

namespace {

// Copies one keyspace page by page; put-if-absent, so that a destination already holding
// any of these keys is refused rather than overwritten.
Result<size_t> copy_keyspace(storage::Store& from, storage::Store& to, storage::Keyspace ks) {
  constexpr size_t kPage = 500;
  size_t copied = 0;
  std::string after;
  for (;;) {
    auto page = from.scan_after(ks, after, kPage);
    if (!page) {
      return tl::unexpected(page.error());
    }
    if (page->empty()) {
      return copied;
    }
    storage::Batch batch;
    for (auto& [key, v] : *page) {
      if (ks == domain::Space::kMeta && key == domain::kFormatKey) {
        continue;  // both hold this release's format: the destination recorded it when opened
      }
      batch.push_back({ks, key, std::move(v.value), 0});
    }
    after = page->back().first;
    size_t writes = batch.size();
    if (writes == 0) {
      continue;
    }
    if (auto done = to.commit_and_wait(std::move(batch)); !done) {
      if (done.error().code == ErrorCode::kConflict) {
        return make_error(ErrorCode::kConflict, "the destination already holds data (" + done.error().message
                                                    + "): copy into an empty store");
      }
      return tl::unexpected(done.error());
    }
    copied += writes;
  }
}

int copy_store(const std::string& from_uri, const std::string& to_uri) {
  auto from = config::parse_store_location(from_uri, "");
  auto to = config::parse_store_location(to_uri, "");
  if (!from || !to) {
    std::cerr << "copy-store: " << (!from ? from.error() : to.error()).message << "\n";
    return 2;
  }
  if (from->kind == to->kind && from->where == to->where) {
    std::cerr << "copy-store: --from and --to name the same store\n";
    return 2;
  }
  // Opened as a serving instance would be (without migrating): refused while a connector
  // runs on it, so that the copy is of a store nobody changes meanwhile, and refused if it
  // holds an older format (`idempay migrate` it first). Nothing is written.
  auto source = config::open_store_at(*from, false, false);
  if (!source) {
    std::cerr << "copy-store: cannot open the source: " << source.error().message << "\n";
    return 1;
  }
  auto destination = config::open_store_at(*to, false);  // takes the destination's lock: no connector on it
  if (!destination) {
    std::cerr << "copy-store: cannot open the destination: " << destination.error().message << "\n";
    return 1;
  }
  const auto names = domain::keyspace_names();
  for (size_t i = 0; i < names.size(); ++i) {
    auto copied = copy_keyspace(**source, **destination, storage::Keyspace{static_cast<uint8_t>(i)});
    if (!copied) {
      std::cerr << "copy-store: " << names[i] << ": " << copied.error().message << "\n";
      return 1;
    }
    std::cout << names[i] << ": " << *copied << " keys\n";
  }
  std::cout << "copied from " << config::describe(*from) << " to " << config::describe(*to)
            << "; check it with `idempay audit verify --store ...` before serving from it\n";
  return 0;
}

}  // namespace

Command add_copy_store(CLI::App& root) {
  struct Options {
    std::string from;
    std::string to;
  };
  auto options = std::make_shared<Options>();
  auto* command = root.add_subcommand("copy-store", "copy a stopped connector's store into an empty one (RocksDB to PostgreSQL)");
  command->add_option("--from", options->from, "rocksdb:DIR or postgresql://...")->required();
  command->add_option("--to", options->to, "postgresql://... or rocksdb:DIR (empty)")->required();
  return {command, [options] { return copy_store(options->from, options->to); }};
}

}  // namespace idempay::cli
