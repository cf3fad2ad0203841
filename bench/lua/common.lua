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

-- wrk's threads, in setup() order, for a done() that reads what each thread counted.
M.threads = {}

-- For wrk's setup(): numbers the threads so that ids never collide between them.
function M.setup(thread)
  thread:set("thread_id", #M.threads)
  M.threads[#M.threads + 1] = thread
end

-- Answers that are not 2xx, by status, and the first one's body: a script's response()
-- calls note_answer, its done() calls report_answers, which prints them for the harness
-- (wrk itself counts them but does not say what they were).

function M.note_answer(status, body)
  if status < 300 then return end
  non2xx_counts = non2xx_counts or {}
  non2xx_counts[status] = (non2xx_counts[status] or 0) + 1
  local parts = {}
  for code, n in pairs(non2xx_counts) do table.insert(parts, code .. "=" .. n) end
  non2xx_summary = table.concat(parts, " ")
  first_non2xx = first_non2xx or body:sub(1, 300):gsub("\n", " ")
end

function M.report_answers()
  for _, t in ipairs(M.threads) do
    local summary = t:get("non2xx_summary")
    if summary then
      io.write("non-2xx statuses: " .. summary .. "\n")
      io.write("first non-2xx body: " .. (t:get("first_non2xx") or "") .. "\n")
    end
  end
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

local pix_template = '{"paymentId":"%s","transactionId":"tx-%s","reference":"ref","orderId":"order",'
  .. '"paymentMethod":"Pix","value":31.9,"currency":"BRL","installments":1,"callbackUrl":"%s",'
  .. '"miniCart":{"buyer":{"firstName":"John","lastName":"Doe","document":"01234567890","documentType":"CPF"}}}'

-- A Pix Create Payment (no card; the buyer becomes the charge's debtor).
function M.pix_create_body(id, callback)
  return string.format(pix_template, id, id, callback or M.default_callback)
end

local boleto_template = '{"paymentId":"%s","transactionId":"tx-%s","reference":"ref","orderId":"order",'
  .. '"paymentMethod":"BankInvoice","value":31.9,"currency":"BRL","installments":1,"callbackUrl":"%s",'
  .. '"miniCart":{"buyer":{"firstName":"John","lastName":"Doe","document":"01234567890","documentType":"CPF",'
  .. '"email":"john.doe@example.com"},"billingAddress":{"country":"BRA","street":"Brigadeiro Faria Lima Avenue",'
  .. '"number":"4440","neighborhood":"Itaim Bibi","postalCode":"04538132","city":"Sao Paulo","state":"SP"}}}'

-- A boleto Create Payment (BankInvoice: the buyer's name, CPF and billing address the boleto carries).
function M.boleto_create_body(id, callback)
  return string.format(boleto_template, id, id, callback or M.default_callback)
end

-- A Create Payment as a storefront sends it (about 2.3 KB): buyer, addresses, items and
-- merchant settings, as the sustained scenarios use.
local full_template = '{"reference":"1072430428324","orderId":"v1072430428ltc-%s","shopperInteraction":"ecommerce",'
  .. '"verificationOnly":false,"paymentId":"%s","paymentMethod":"Visa","paymentMethodCustomCode":null,'
  .. '"merchantName":"mystore","value":31.9,"currency":"BRL","installments":3,"installmentsInterestRate":0.0199,'
  .. '"installmentsValue":10.63,"deviceFingerprint":"12ade389087fe","ipAddress":"187.105.111.65",'
  .. '"transactionId":"TX-%s","card":{"holder":"John Doe","number":"%s","csc":"123",'
  .. '"expiration":{"month":"12","year":"2030"},"document":"01234567890"},'
  .. '"miniCart":{"buyer":{"id":"c1245228-1c68-11e6-94ac-0afa86a846a5","firstName":"John","lastName":"Doe",'
  .. '"document":"01234567890","documentType":"CPF","corporateName":null,"tradeName":null,"corporateDocument":null,'
  .. '"isCorporate":false,"email":"john.doe@example.com","phone":"+5521999999999","createdDate":"2026-11-30T12:00:00"},'
  .. '"shippingAddress":{"country":"BRA","street":"Praia de Botafogo St.","number":"300","complement":"3rd Floor",'
  .. '"neighborhood":"Botafogo","postalCode":"22250040","city":"Rio de Janeiro","state":"RJ"},'
  .. '"billingAddress":{"country":"BRA","street":"Brigadeiro Faria Lima Avenue","number":"4440","complement":"10th Floor",'
  .. '"neighborhood":"Itaim Bibi","postalCode":"04538132","city":"Sao Paulo","state":"SP"},'
  .. '"items":[{"id":"132981","name":"My First Product","price":2134.9,"quantity":2,"discount":5.0,'
  .. '"deliveryType":"Normal","categoryId":"12","sellerId":"1"},'
  .. '{"id":"123242","name":"My Second Product","price":21.98,"quantity":1,"discount":1.0,'
  .. '"deliveryType":"Normal","categoryId":"7","sellerId":"1"},'
  .. '{"id":"773211","name":"A Third Product With A Longer Name","price":9.9,"quantity":4,"discount":0,'
  .. '"deliveryType":"Pickup","categoryId":"31","sellerId":"2"}],'
  .. '"shippingValue":11.44,"taxValue":10.01},'
  .. '"url":"https://admin.example/orders?q=v1072430428ltc-%s","callbackUrl":"%s",'
  .. '"inboundRequestsUrl":"https://api.example/inbound-requests/:action",'
  .. '"returnUrl":"https://shop.example/checkout/order/v1072430428ltc-%s",'
  .. '"recipients":[{"id":"mystore","name":"My Store","documentType":"CNPJ","document":"12345678000190",'
  .. '"role":"marketplace","chargeProcessingFee":true,"chargebackLiable":true,"amount":31.9}],'
  .. '"merchantSettings":[{"name":"softDescriptor","value":"MYSTORE"},{"name":"antifraudProfile","value":"default"}]}'

function M.full_create_body(id, card, callback)
  return string.format(full_template, id, id, id, card or M.approved_card, id, callback or M.default_callback, id)
end

return M
