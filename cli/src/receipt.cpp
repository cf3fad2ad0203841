// `idempay receipt PAYMENT_ID`: a receipt of the payment as its store holds it, signed with the
// connector's key; `idempay keys show`: the anchor, every key receipts were signed with.
#include <algorithm>
#include <iostream>

#include "idempay/answers/report.hpp"
#include "idempay/cli/commands.hpp"
#include "idempay/receipts/key_ring.hpp"
#include "idempay/receipts/receipt.hpp"
#include "idempay/signing/jose.hpp"
#include "store_access.hpp"

namespace idempay::cli {

namespace {

struct KeyOptions {
  StoreOptions where;
  std::string signing_key;  // empty: the development key in the data directory
};

void add_key_option(CLI::App& command, KeyOptions& options) {
  add_store_options(command, options.where);
  command.add_option("--signing-key", options.signing_key, "the connector's --signing-key (default: its development key)")
      ->envname("IDEMPAY_SIGNING_KEY");
}

int receipt(const KeyOptions& options, const std::string& payment_id, bool json) {
  std::string path = options.signing_key.empty() ? receipts::development_key_path(options.where.data_dir)
                                                 : options.signing_key;
  auto key = signing::SigningKey::load(path);
  if (!key) {
    return failed(key.error());
  }
  auto store = open_for_operator(options.where);
  if (!store) {
    return failed(store.error());
  }
  // A receipt signed by a key the anchor does not list would verify for nobody.
  auto anchor = receipts::published_keys(**store);
  if (!anchor) {
    return failed(anchor.error());
  }
  const std::string& kid = key->public_key().kid;
  if (std::none_of(anchor->begin(), anchor->end(), [&](const auto& k) { return k.kid == kid; })) {
    return failed(Error{ErrorCode::kInvalidArgument,
                        "key " + kid + " is not published in this store: start the connector with it first"});
  }
  auto stored = domain::read_payment(domain::disk_lookup(**store), payment_id);
  if (!stored || !*stored) {
    return failed(Error{ErrorCode::kUnavailable, "the store cannot be read"});
  }
  // A payment stored before owners were recorded names none (serve names its first merchant).
  const auto& record = (*stored)->record;
  auto claims = receipts::claims_of(**stored, payment_id, record ? record->owner : std::string());
  if (!claims) {
    return failed(claims.error(), 3);
  }
  std::string jws = receipts::issue(*key, *claims);
  if (json) {
    std::cout << terminal_safe_json(answers::receipt_json(jws, kid, receipts::claims_json(*claims))) << "\n";
  } else {
    std::cout << jws << "\n";
  }
  return 0;
}

int show_keys(const StoreOptions& where) {
  auto store = open_for_operator(where);
  if (!store) {
    return failed(store.error());
  }
  auto anchor = receipts::published_keys(**store);
  if (!anchor) {
    return failed(anchor.error());
  }
  std::cout << signing::jwk_set_json(*anchor) << "\n";
  return 0;
}

}  // namespace

Command add_receipt(CLI::App& root) {
  struct Options {
    KeyOptions keys;
    std::string payment_id;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  auto* command = root.add_subcommand("receipt", "a payment's receipt: its stored state and audit head, signed (JWS)");
  command->add_option("PAYMENT_ID", options->payment_id, "the paymentId")->required();
  add_key_option(*command, options->keys);
  command->add_flag("--json", options->json, "the operator API's document: the receipt, its key id, its claims");
  return {command, [options] {
            return receipt(options->keys, options->payment_id, options->json);
          }};
}

Command add_keys(CLI::App& root) {
  auto where = std::make_shared<StoreOptions>();
  auto* command = root.add_subcommand("keys", "the keys receipts are signed with");
  command->require_subcommand(1);
  auto* show = command->add_subcommand("show", "the anchor: every key in force or retired, as a JWK Set (RFC 8037)");
  add_store_options(*show, *where);
  return {command, [where] { return show_keys(*where); }};
}

}  // namespace idempay::cli
