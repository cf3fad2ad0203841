-- Replays of one Create Payment (the gateway's retries): every answer comes from the store.
local common = require("common")

function init(args)
  wrk.method = "POST"
  wrk.path = "/payments"
  common.gateway_headers()
  wrk.body = common.create_body(args[1] or "replay")
end
