#!/bin/sh
# Nagios Core / Icinga 2 notification command for intake's `nagios` preset. Needs curl and jq.
#   notify-intake.sh TYPE HOST ADDRESS SERVICE STATE STATE_TYPE OUTPUT TIMET
# SERVICE is empty for host notifications (then STATE is UP, DOWN or UNREACHABLE).
# Environment: INTAKE_URL (https://intake.example.com/events/webhook_<name>),
# INTAKE_AUTHORIZATION (the "authorization" key of the credentials Secret: "Basic ..."),
# INTAKE_MANAGER (optional: "Nagios" by default, "Icinga 2" for Icinga).
set -eu
jq -n --arg notification_type "$1" --arg host "$2" --arg address "$3" --arg service "$4" \
  --arg state "$5" --arg state_type "$6" --arg output "$7" --arg timestamp "$8" \
  --arg manager "${INTAKE_MANAGER:-Nagios}" \
  '{notification_type: $notification_type, host: $host, address: $address, service: $service,
    state: $state, state_type: $state_type, output: $output, timestamp: $timestamp, manager: $manager}' |
  curl -fsS --max-time 10 --retry 3 --retry-all-errors \
    -H "Authorization: ${INTAKE_AUTHORIZATION}" -H 'Content-Type: application/json' \
    --data-binary @- "${INTAKE_URL}"
