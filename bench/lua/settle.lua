-- Settlements of 0.01 with a new requestId each, spread over 1,000 pre-created payments.
local common = require("common")
setup = common.setup

function init(args)
  run_id = args[1] or tostring(os.time())
  counter = 0
  wrk.method = "POST"
  common.gateway_headers()
end

function request()
  counter = counter + 1
  local payment = "settle-base-" .. (counter % 1000)
  local body = string.format('{"requestId":"%s-%d-%d","value":0.01}', run_id, thread_id, counter)
  return wrk.format(nil, "/payments/" .. payment .. "/settlements", nil, body)
end

function response(status, headers, body)
  common.note_answer(status, body)
end

done = common.report_answers
