-- Replays of one Create Payment (the gateway's retries): every answer comes from the store.
function init(args)
  local id = args[1] or "replay"
  wrk.method = "POST"
  wrk.path = "/payments"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-VTEX-API-AppKey"] = os.getenv("IDEMPAY_APP_KEY")
  wrk.headers["X-VTEX-API-AppToken"] = os.getenv("IDEMPAY_APP_TOKEN")
  wrk.body = '{"paymentId":"' .. id .. '","transactionId":"tx","reference":"ref","orderId":"order",'
    .. '"paymentMethod":"Visa","value":31.9,"currency":"BRL","installments":1,'
    .. '"callbackUrl":"https://gateway.example/callback?X-VTEX-signature=x",'
    .. '"card":{"holder":"Bench","number":"4444333322221111","csc":"123",'
    .. '"expiration":{"month":"12","year":"2030"}}}'
end
