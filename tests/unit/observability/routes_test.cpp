#include <gtest/gtest.h>

#include "idempay/observability/logs.hpp"

namespace idempay::observability {
namespace {

// What logs, metrics and span names call a request: its route's template, never its text.
TEST(RouteTemplateTest, NamesTheProtocolsRoutesByTemplate) {
  EXPECT_EQ(route_template("/payments"), "/payments");
  EXPECT_EQ(route_template("/payments/p-1/settlements"), "/payments/{paymentId}/settlements");
  EXPECT_EQ(route_template("/webhooks/acquirer"), "/webhooks/acquirer");
  EXPECT_EQ(route_template("/no/such/route"), "unknown");
}

TEST(RouteTemplateTest, NamesAnAcquirerKindsWebhooksWithoutTheirSegments) {
  EXPECT_EQ(route_template("/webhooks/adyen/shop/adyen"), "/webhooks/{kind}/{merchant}/{acquirer}");
  EXPECT_EQ(route_template("/webhooks/adyen/shop/adyen/"), "/webhooks/{kind}/{merchant}/{acquirer}");
  EXPECT_EQ(route_template("/webhooks/bcb-pix/shop/psp/pix"), "/webhooks/{kind}/{merchant}/{acquirer}/{suffix}");
  // Not a webhook's shape: nothing of it is a template.
  for (const char* path : {"/webhooks/", "/webhooks/adyen", "/webhooks/adyen/shop", "/webhooks/adyen//psp",
                           "/webhooks/adyen/shop/psp//", "/webhooks/a/b/c/d/e", "/webhooks//shop/psp"}) {
    EXPECT_EQ(route_template(path), "unknown") << path;
  }
}

}  // namespace
}  // namespace idempay::observability
