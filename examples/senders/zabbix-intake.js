/* global value, HttpRequest */ // provided by the Zabbix webhook runtime
// Zabbix webhook media type script for intake's `zabbix` preset (Alerts > Media types > Create,
// type Webhook). Parameters (name = value):
//   url = https://intake.example.com/events/webhook_<name>
//   authorization = the "authorization" key of the credentials Secret ("Basic ...")
//   event_id = {EVENT.ID}            event_value = {EVENT.VALUE}
//   event_nseverity = {EVENT.NSEVERITY}   event_severity = {EVENT.SEVERITY}
//   event_name = {EVENT.NAME}        event_update_status = {EVENT.UPDATE.STATUS}
//   event_tags = {EVENT.TAGSJSON}    event_opdata = {EVENT.OPDATA}
//   host = {HOST.HOST}               host_ip = {HOST.IP}
//   trigger_id = {TRIGGER.ID}        trigger_name = {TRIGGER.NAME}
//   zabbix_url = {$ZABBIX.URL}
var params = JSON.parse(value);
var url = params.url;
var authorization = params.authorization;
delete params.url;
delete params.authorization;
var request = new HttpRequest();
request.addHeader('Content-Type: application/json');
request.addHeader('Authorization: ' + authorization);
var response = request.post(url, JSON.stringify(params));
if (request.getStatus() !== 200) {
  throw 'intake answered ' + request.getStatus() + ': ' + response;
}
return 'OK';
