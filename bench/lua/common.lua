-- Shared by the wrk scripts (loaded with require; the harness puts this folder on
-- package.path through LUA_PATH): thread numbering, the gateway's headers, "key=value"
-- options and the Create Payment body.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } idempay_timespec;
  int clock_gettime(int clock_id, idempay_timespec* tp);
]]

local M = {}

-- Seconds on the monotonic clock (wrk's Lua has only os.time, in whole seconds).
function M.now()
  local t = ffi.new("idempay_timespec")
  ffi.C.clock_gettime(1, t)
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) / 1e9
end

local next_thread = 0

-- For wrk's setup(): numbers the threads so that ids never collide between them.
function M.setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
end

-- Arguments after "--" as key=value pairs; a bare word is stored under "run".
function M.options(args, defaults)
  local opts = {}
  for k, v in pairs(defaults or {}) do opts[k] = v end
  for _, arg in ipairs(args) do
    local k, v = arg:match("^([%w_]+)=(.*)$")
    if k then opts[k] = v else opts.run = arg end
  end
  return opts
end

function M.gateway_headers()
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-VTEX-API-AppKey"] = os.getenv("IDEMPAY_APP_KEY")
  wrk.headers["X-VTEX-API-AppToken"] = os.getenv("IDEMPAY_APP_TOKEN")
end

local template = '{"paymentId":"%s","transactionId":"tx-%s","reference":"ref","orderId":"order",'
  .. '"paymentMethod":"Visa","value":31.9,"currency":"BRL","installments":1,'
  .. '"callbackUrl":"%s","card":{"holder":"Bench","number":"%s","csc":"123",'
  .. '"expiration":{"month":"12","year":"2030"}}}'

M.default_callback = "https://gateway.example/callback?X-VTEX-signature=x"
M.approved_card = "4444333322221111"

function M.create_body(id, card, callback)
  return string.format(template, id, id, callback or M.default_callback, card or M.approved_card)
end

return M
