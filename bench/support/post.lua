-- wrk script for `make bench`: POSTs one fixed body, read once from a file, with fixed headers.
--   WRK_BODY_FILE     file holding the request body (required)
--   WRK_CONTENT_TYPE  Content-Type header (default application/json)
--   WRK_AUTHORIZATION Authorization header, when set
--   WRK_APIKEY        apiKey header, when set
-- done() prints one machine-readable line, "WRKJSON {...}", after wrk's own report; latencies are in
-- microseconds, as wrk measures them.

local path = os.getenv("WRK_BODY_FILE")
if path == nil or path == "" then
  error("WRK_BODY_FILE is not set")
end
local file = assert(io.open(path, "rb"))
local body = file:read("*a")
file:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = os.getenv("WRK_CONTENT_TYPE") or "application/json"
local authorization = os.getenv("WRK_AUTHORIZATION")
if authorization ~= nil and authorization ~= "" then
  wrk.headers["Authorization"] = authorization
end
local apikey = os.getenv("WRK_APIKEY")
if apikey ~= nil and apikey ~= "" then
  wrk.headers["apiKey"] = apikey
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
