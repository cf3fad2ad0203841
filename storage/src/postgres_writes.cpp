#include "postgres_writes.hpp"

namespace idempay::storage {

std::string bytea_literal(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'\\x";
  out.reserve(out.size() + bytes.size() * 2 + 1);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  out.push_back('\'');
  return out;
}

namespace {

void append_item(std::string& list, const std::string& literal) {
  if (!list.empty()) {
    list.push_back(',');
  }
  list += literal;
}

}  // namespace

void GroupStatements::add(const Write& w, bool checked, uint64_t previous, uint64_t etag) {
  Kind kind;
  if (!w.value) {
    if (checked && previous == 0) {
      return;  // a conditional delete of an absent key: nothing to do
    }
    kind = checked ? Kind::kDeleteIfAt : Kind::kDeleteAny;
  } else if (!checked) {
    kind = Kind::kUpsert;
  } else {
    kind = previous == 0 ? Kind::kInsertIfAbsent : Kind::kSwap;
  }
  auto id = std::make_pair(static_cast<size_t>(w.keyspace.index), w.key);
  if (keys_in_round_.count(id) != 0) {
    end_round();
  }
  keys_in_round_.insert(std::move(id));
  Rows& rows = round_[{w.keyspace.index, kind}];
  append_item(rows.keys, bytea_literal(w.key));
  if (w.value) {
    append_item(rows.values, bytea_literal(*w.value));
    append_item(rows.etags, std::to_string(etag));
  }
  if (checked) {
    append_item(rows.previous, std::to_string(previous));
  }
  ++rows.count;
}

std::vector<GroupStatement> GroupStatements::take() {
  end_round();
  return std::exchange(done_, {});
}

void GroupStatements::end_round() {
  for (const auto& [where, rows] : round_) {
    done_.push_back(statement(where.first, where.second, rows));
  }
  round_.clear();
  keys_in_round_.clear();
}

GroupStatement GroupStatements::statement(size_t keyspace, Kind kind, const Rows& rows) const {
  const std::string& table = tables_[keyspace];
  const std::string keys = "ARRAY[" + rows.keys + "]::bytea[]";
  const std::string values = "ARRAY[" + rows.values + "]::bytea[]";
  const std::string etags = "ARRAY[" + rows.etags + "]::bigint[]";
  const std::string previous = "ARRAY[" + rows.previous + "]::bigint[]";
  const std::string insert = "INSERT INTO " + table + " (key, value, etag) SELECT * FROM unnest(" + keys + ","
                             + values + "," + etags + ") ON CONFLICT ";
  switch (kind) {
    case Kind::kUpsert:
      return {insert + "(key) DO UPDATE SET value = EXCLUDED.value, etag = EXCLUDED.etag", -1};
    case Kind::kInsertIfAbsent:
      return {insert + "DO NOTHING", rows.count};
    case Kind::kSwap:
      return {"UPDATE " + table + " AS t SET value = v.value, etag = v.etag FROM unnest(" + keys + "," + values + ","
                  + etags + "," + previous + ") AS v(key, value, etag, previous) WHERE t.key = v.key AND t.etag = v.previous",
              rows.count};
    case Kind::kDeleteAny:
      return {"DELETE FROM " + table + " WHERE key = ANY(" + keys + ")", -1};
    case Kind::kDeleteIfAt:
      return {"DELETE FROM " + table + " AS t USING unnest(" + keys + "," + previous
                  + ") AS v(key, previous) WHERE t.key = v.key AND t.etag = v.previous",
              rows.count};
  }
  return {};
}

}  // namespace idempay::storage
