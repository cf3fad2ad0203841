#include "idempay/config/manifest.hpp"

#include <set>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/config/merchants.hpp"
#include "idempay/base/private_files.hpp"

namespace idempay::config {

namespace {

Error invalid(const std::string& where, const std::string& what) {
  return Error{ErrorCode::kInvalidArgument, where + ": " + what};
}

Status check_members(const JsonValue& v, const std::string& where, const std::set<std::string, std::less<>>& known) {
  if (v.type() != JsonValue::Type::kObject) {
    return tl::unexpected(invalid(where, "must be an object"));
  }
  for (const auto& [name, unused] : v.members()) {
    if (known.count(name) == 0) {
      return tl::unexpected(invalid(where, "unknown field \"" + name + "\""));
    }
  }
  return {};
}

// A whole number of seconds within [low, high], or the default when absent.
Result<int64_t> seconds(const JsonValue& m, std::string_view name, int64_t fallback, int64_t low, int64_t high,
                        const std::string& where) {
  const JsonValue* v = m.find(name);
  if (v == nullptr) {
    return fallback;
  }
  int64_t value = m.int_or(name, -1);
  if (v->type() != JsonValue::Type::kNumber || std::to_string(value) != v->text() || value < low || value > high) {
    return tl::unexpected(invalid(where, std::string(name) + " must be a whole number of seconds from " +
                                             std::to_string(low) + " to " + std::to_string(high)));
  }
  return value;
}

Result<std::pair<std::string, ppp::MethodTerms>> read_method(const JsonValue& m, const std::string& where) {
  if (auto s = check_members(m, where, {"name", "allowsSplit", "delayToAutoSettle", "delayToAutoSettleAfterAntifraud",
                                        "delayToCancel", "manualOperations"});
      !s) {
    return tl::unexpected(s.error());
  }
  std::string name = m.string_or("name");
  auto family = ppp::method_family(name);
  if (!family) {
    return tl::unexpected(invalid(where, "\"" + name + "\" is not a method this connector implements"));
  }
  ppp::MethodTerms terms;
  const JsonValue* split = m.find("allowsSplit");
  if (split != nullptr) {
    auto mode = split->type() == JsonValue::Type::kString ? ppp::split_mode_from(split->text()) : std::nullopt;
    if (!mode) {
      return tl::unexpected(invalid(where, "allowsSplit must be disabled, onAuthorize or onCapture"));
    }
    terms.allows_split = *mode;
  }
  bool pix = *family == ppp::MethodFamily::kPix;
  auto settle = seconds(m, "delayToAutoSettle", terms.delay_to_auto_settle, 0, 604'800, where);
  auto antifraud = seconds(m, "delayToAutoSettleAfterAntifraud", terms.delay_to_auto_settle_after_antifraud, 0,
                           604'800, where);
  auto cancel = seconds(m, "delayToCancel", pix ? 1'800 : terms.delay_to_cancel, pix ? 900 : 600,
                        pix ? 3'600 : 2'592'000, where);
  for (auto* r : {&settle, &antifraud, &cancel}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  terms.delay_to_auto_settle = *settle;
  terms.delay_to_auto_settle_after_antifraud = *antifraud;
  terms.delay_to_cancel = *cancel;
  if (auto s = read_manual_operations(m, where, terms.manual_cancel, terms.manual_refund); !s) {
    return tl::unexpected(s.error());
  }
  return std::make_pair(std::move(name), terms);
}

Status write_custom_field(JsonWriter& w, const JsonValue& f, const std::string& where) {
  if (auto s = check_members(f, where, {"name", "type", "options"}); !s) {
    return s;
  }
  std::string name = f.string_or("name");
  std::string type = f.string_or("type");
  if (name.empty() || (type != "text" && type != "password" && type != "select")) {
    return tl::unexpected(invalid(where, "needs a name and a type of text, password or select"));
  }
  w.begin_object().key("name").string(name).key("type").string(type);
  const JsonValue* options = f.find("options");
  if (type == "select") {
    if (options == nullptr || options->type() != JsonValue::Type::kArray || options->items().empty()) {
      return tl::unexpected(invalid(where, "a select needs options [{\"text\": ..., \"value\": ...}]"));
    }
    w.key("options").begin_array();
    for (const JsonValue& o : options->items()) {
      const JsonValue* text = o.find("text");
      const JsonValue* value = o.find("value");
      if (text == nullptr || value == nullptr || text->type() != JsonValue::Type::kString ||
          value->type() != JsonValue::Type::kString) {
        return tl::unexpected(invalid(where, "each option needs a text and a value, both strings"));
      }
      w.begin_object().key("text").string(text->text()).key("value").string(value->text()).end_object();
    }
    w.end_array();
  } else if (options != nullptr) {
    return tl::unexpected(invalid(where, "only a select has options"));
  }
  w.end_object();
  return {};
}

Status write_auto_settle_delay(JsonWriter& w, const JsonValue& d) {
  if (auto s = check_members(d, "autoSettleDelay", {"minimum", "maximum"}); !s) {
    return s;
  }
  auto hours = [&](std::string_view name) -> std::optional<int64_t> {
    const JsonValue* v = d.find(name);
    if (v == nullptr || v->type() != JsonValue::Type::kString || v->text().empty() || v->text().size() > 5 ||
        v->text().find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoll(v->text());
  };
  auto low = hours("minimum");
  auto high = hours("maximum");
  if (!low || !high || *low > *high) {
    return tl::unexpected(invalid("autoSettleDelay", "needs minimum and maximum as strings of whole hours, minimum <= maximum"));
  }
  w.key("autoSettleDelay").begin_object();
  w.key("minimum").string(std::to_string(*low)).key("maximum").string(std::to_string(*high)).end_object();
  return {};
}

// The two documents for a list of (name, terms), in the given order.
void write_documents(Manifest& out, const std::vector<std::pair<std::string, ppp::MethodTerms>>& methods,
                     JsonWriter& manifest) {
  JsonWriter names;
  names.begin_object().key("paymentMethods").begin_array();
  for (const auto& [name, terms] : methods) {
    names.string(name);
    out.methods.emplace(name, terms);
  }
  names.end_array().end_object();
  out.payment_methods_json = std::move(names).take();
  out.manifest_json = std::move(manifest).take();
}

void write_method_list(JsonWriter& w, const std::vector<std::pair<std::string, ppp::MethodTerms>>& methods) {
  w.key("paymentMethods").begin_array();
  for (const auto& [name, terms] : methods) {
    w.begin_object().key("name").string(name).key("allowsSplit").string(to_string(terms.allows_split)).end_object();
  }
  w.end_array();
}

}  // namespace

Manifest default_manifest() {
  std::vector<std::pair<std::string, ppp::MethodTerms>> methods;
  for (const auto& m : ppp::kPaymentMethods) {
    ppp::MethodTerms terms;
    if (m.family == ppp::MethodFamily::kPix) {
      terms.delay_to_cancel = 1'800;
    }
    methods.emplace_back(std::string(m.name), terms);
  }
  Manifest out;
  JsonWriter w;
  w.begin_object();
  write_method_list(w, methods);
  w.end_object();
  write_documents(out, methods, w);
  return out;
}

Result<Manifest> load_manifest(const std::string& path) {
  auto doc = read_json_file(path);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  if (auto s = check_members(*doc, path, {"paymentMethods", "customFields", "autoSettleDelay"}); !s) {
    return tl::unexpected(s.error());
  }
  const JsonValue* list = doc->find("paymentMethods");
  if (list == nullptr || list->type() != JsonValue::Type::kArray || list->items().empty()) {
    return tl::unexpected(invalid(path, "paymentMethods must list at least one method"));
  }
  std::vector<std::pair<std::string, ppp::MethodTerms>> methods;
  std::set<std::string> seen;
  for (size_t i = 0; i < list->items().size(); ++i) {
    auto method = read_method(list->items()[i], path + ": paymentMethods[" + std::to_string(i) + "]");
    if (!method) {
      return tl::unexpected(method.error());
    }
    if (!seen.insert(method->first).second) {
      return tl::unexpected(invalid(path, "method " + method->first + " is listed twice"));
    }
    methods.push_back(std::move(*method));
  }
  JsonWriter w;
  w.begin_object();
  write_method_list(w, methods);
  if (const JsonValue* fields = doc->find("customFields"); fields != nullptr) {
    if (fields->type() != JsonValue::Type::kArray) {
      return tl::unexpected(invalid(path, "customFields must be an array"));
    }
    w.key("customFields").begin_array();
    for (size_t i = 0; i < fields->items().size(); ++i) {
      std::string where = path + ": customFields[" + std::to_string(i) + "]";
      if (auto s = write_custom_field(w, fields->items()[i], where); !s) {
        return tl::unexpected(s.error());
      }
    }
    w.end_array();
  }
  if (const JsonValue* delay = doc->find("autoSettleDelay"); delay != nullptr) {
    if (auto s = write_auto_settle_delay(w, *delay); !s) {
      return tl::unexpected(invalid(path, s.error().message));
    }
  }
  w.end_object();
  Manifest out;
  write_documents(out, methods, w);
  return out;
}

}  // namespace idempay::config
