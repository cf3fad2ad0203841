#include "idempay/acquirers/kinds.hpp"

#include "idempay/acquirers/adyen.hpp"
#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/acquirers/stub.hpp"

namespace idempay::acquirer {

const std::vector<const Kind*>& acquirer_kinds() {
  static const std::vector<const Kind*> kinds{&stub_kind(), &http_kind(), &bcb_pix_kind(), &adyen_kind()};
  return kinds;
}

}  // namespace idempay::acquirer
