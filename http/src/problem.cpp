#include "idempay/http/problem.hpp"

#include "idempay/base/json_writer.hpp"

namespace idempay::http {

Response problem(unsigned status, std::string_view title, std::string_view detail) {
  JsonWriter w;
  w.begin_object().key("type").string("about:blank").key("title").string(title);
  w.key("status").number(status).key("detail").string(detail).end_object();
  return Response(status, std::move(w).take(), "application/problem+json");
}

}  // namespace idempay::http
