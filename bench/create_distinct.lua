-- Create Payment with a fresh paymentId on every request (approved test card, in-process stub).
local next_thread = 0

function setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
end

function init(args)
  run_id = args[1] or tostring(os.time())
  counter = 0
  wrk.method = "POST"
  wrk.path = "/payments"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-VTEX-API-AppKey"] = os.getenv("IDEMPAY_APP_KEY")
  wrk.headers["X-VTEX-API-AppToken"] = os.getenv("IDEMPAY_APP_TOKEN")
end

local template = '{"paymentId":"%s","transactionId":"tx-%s","reference":"ref","orderId":"order",'
  .. '"paymentMethod":"Visa","value":31.9,"currency":"BRL","installments":1,'
  .. '"callbackUrl":"https://gateway.example/callback?X-VTEX-signature=x",'
  .. '"card":{"holder":"Bench","number":"4444333322221111","csc":"123",'
  .. '"expiration":{"month":"12","year":"2030"}}}'

function request()
  counter = counter + 1
  local id = string.format("%s-%d-%d", run_id, thread_id, counter)
  return wrk.format(nil, nil, nil, string.format(template, id, id))
end
