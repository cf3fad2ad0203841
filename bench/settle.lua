-- Settlements of 0.01 with a new requestId each, spread over 1,000 pre-created payments.
local next_thread = 0

function setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
end

function init(args)
  run_id = args[1] or tostring(os.time())
  counter = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-VTEX-API-AppKey"] = os.getenv("IDEMPAY_APP_KEY")
  wrk.headers["X-VTEX-API-AppToken"] = os.getenv("IDEMPAY_APP_TOKEN")
end

function request()
  counter = counter + 1
  local payment = "settle-base-" .. (counter % 1000)
  local body = string.format('{"requestId":"%s-%d-%d","value":0.01}', run_id, thread_id, counter)
  return wrk.format(nil, "/payments/" .. payment .. "/settlements", nil, body)
end
