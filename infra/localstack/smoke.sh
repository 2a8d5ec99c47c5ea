#!/usr/bin/env bash
# fogbridge on LocalStack: deploy the CDK app with cdklocal and check that it answers.
#
# NOT RUN IN THIS PROJECT'S CI, AND NEVER RUN TO THE END ANYWHERE. The machines fogbridge is built and
# tested on have no Docker, and LocalStack runs Lambda functions in Docker containers. What was tried
# there, against LocalStack Community 4.13.1 started from PyPI in host mode (no Docker): `bash -n`; the
# health check (it stops, as it should, on `apigatewayv2=absent`); and, with that one check removed, the
# bootstrap and the deploy up to synth, asset upload and change set, where LocalStack's host-mode
# DynamoDB failed the stack. The status, queue and worker checks have never run. Treat a failure as a
# finding about this script or about LocalStack, not only about fogbridge.
#
# What it needs:
#   - LocalStack running with Docker access for Lambda, reachable at $LOCALSTACK_URL, and an edition that
#     serves API Gateway v2 (HTTP APIs): that is LocalStack Pro (LOCALSTACK_AUTH_TOKEN). LocalStack
#     Community has no `apigatewayv2` service; the script stops at the health check if it is missing.
#   - On an x86_64 Docker host, LocalStack started with LAMBDA_IGNORE_ARCHITECTURE=1 (the functions are
#     arm64), unless Docker can run arm64 images.
#   - Node.js 20+ and `npm ci` done in this repository (aws-cdk and esbuild come from node_modules;
#     cdklocal, from the npm package aws-cdk-local@3.0.4, is fetched by npx and not added to package.json).
#   - curl, and the AWS CLI (`aws`; `awslocal` is the same with the endpoint preset).
#
# Settings (environment):
#   LOCALSTACK_URL  LocalStack's gateway (default http://127.0.0.1:4566). Use an IP address: the S3 SDK
#                   then uploads the function assets path-style, with no DNS for <bucket>.<host>.
#   AWS_REGION      region to deploy to (default us-east-1)
#   AUTH_ISSUER     https issuer of user tokens (default https://issuer.example.com/); only the JWT
#                   authorizer's configuration: the status route checked here is public
#   AUTH_AUDIENCE   audience of user tokens (default fogbridge)
#   STACK_NAME      CloudFormation stack name (default fogbridge-smoke)
#   SMOKE_WAIT      seconds to wait for the first status answer and for the worker (default 180)
#
# It prints one line per check and ends with PASS (exit 0) or FAIL (exit 1).

set -uo pipefail

LOCALSTACK_URL="${LOCALSTACK_URL:-http://127.0.0.1:4566}"
LOCALSTACK_URL="${LOCALSTACK_URL%/}"
REGION="${AWS_REGION:-us-east-1}"
AUTH_ISSUER="${AUTH_ISSUER:-https://issuer.example.com/}"
AUTH_AUDIENCE="${AUTH_AUDIENCE:-fogbridge}"
STACK_NAME="${STACK_NAME:-fogbridge-smoke}"
SMOKE_WAIT="${SMOKE_WAIT:-180}"
ACCOUNT=000000000000

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/fogbridge-smoke.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

FAILED=0
pass() { printf 'ok    %s\n' "$1"; }
fail() {
  printf 'FAIL  %s\n' "$1"
  FAILED=$((FAILED + 1))
}
# A failed step that later steps depend on: stop here.
fatal() {
  fail "$1"
  printf '\nFAIL: %s (later checks not run)\n' "$1"
  exit 1
}

cd "$ROOT" || fatal "cannot enter the repository at $ROOT"

for tool in node npx curl aws; do
  command -v "$tool" >/dev/null 2>&1 || fatal "'$tool' is not on PATH (see the requirements at the top of this script)"
done
[ -f node_modules/aws-cdk/package.json ] || fatal "node_modules/aws-cdk is missing: run 'npm ci' first"

# The AWS CLI, pointed at LocalStack with its test credentials.
awsl() {
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION="$REGION" \
    aws --endpoint-url "$LOCALSTACK_URL" --region "$REGION" --output text "$@"
}

# cdklocal 3.0.4 wrapping this repository's own aws-cdk (found through NODE_PATH). It clears every other
# AWS_* variable; the region is passed through its allow-list.
cdklocal() {
  NODE_PATH="$ROOT/node_modules${NODE_PATH:+:$NODE_PATH}" \
    AWS_ENDPOINT_URL="$LOCALSTACK_URL" \
    AWS_ENDPOINT_URL_S3="$LOCALSTACK_URL" \
    AWS_REGION="$REGION" \
    AWS_DEFAULT_REGION="$REGION" \
    AWS_ENVAR_ALLOWLIST=AWS_REGION,AWS_DEFAULT_REGION \
    npx --yes aws-cdk-local@3.0.4 "$@"
}

echo "fogbridge LocalStack smoke test: $LOCALSTACK_URL, region $REGION, stack $STACK_NAME"

# 1. LocalStack is up and serves every service the stack and the bootstrap stack use.
if ! curl -fsS --max-time 10 "$LOCALSTACK_URL/_localstack/health" -o "$WORK/health.json"; then
  fatal "LocalStack health: no answer from $LOCALSTACK_URL/_localstack/health"
fi
# shellcheck disable=SC2016 # JavaScript, not shell: ${...} is a template literal.
missing="$(
  node -e '
    const health = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const services = health.services ?? {};
    const needed = ["cloudformation", "s3", "ssm", "sts", "iam", "lambda", "logs", "dynamodb", "sqs",
      "cloudwatch", "events", "apigatewayv2"];
    const bad = needed.filter((name) => !["available", "running"].includes(services[name]));
    console.log(bad.map((name) => `${name}=${services[name] ?? "absent"}`).join(" "));
  ' "$WORK/health.json"
)" || fatal "LocalStack health: could not read $WORK/health.json"
if [ -n "$missing" ]; then
  fatal "LocalStack health: services not available: $missing (apigatewayv2 needs LocalStack Pro)"
fi
pass "LocalStack health: all needed services available"

# 2. Bootstrap (idempotent) and deploy. Inside a CDK project bootstrap synthesizes the app too, so both
# get the required context (infra/lib/context.ts: authIssuer and authAudience; the rest has defaults).
CONTEXT=(-c "authIssuer=$AUTH_ISSUER" -c "authAudience=$AUTH_AUDIENCE" -c "stackName=$STACK_NAME")
if ! cdklocal bootstrap "aws://$ACCOUNT/$REGION" --output "$WORK/cdk.out" "${CONTEXT[@]}" >"$WORK/bootstrap.log" 2>&1; then
  tail -n 40 "$WORK/bootstrap.log"
  fatal "cdklocal bootstrap aws://$ACCOUNT/$REGION"
fi
pass "cdklocal bootstrap aws://$ACCOUNT/$REGION"

if ! cdklocal deploy --require-approval never \
  --output "$WORK/cdk.out" \
  --outputs-file "$WORK/outputs.json" \
  "${CONTEXT[@]}" >"$WORK/deploy.log" 2>&1; then
  tail -n 60 "$WORK/deploy.log"
  fatal "cdklocal deploy (log above)"
fi
pass "cdklocal deploy $STACK_NAME"

# 3. The stack outputs.
output() {
  node -e '
    const outputs = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const value = outputs[process.argv[2]]?.[process.argv[3]];
    if (!value) process.exit(1);
    console.log(value);
  ' "$WORK/outputs.json" "$STACK_NAME" "$1"
}
API_URL="$(output ApiUrl)" || fatal "stack output ApiUrl missing from $WORK/outputs.json"
SERVICE_QUEUE_NAME="$(output ServiceQueueName)" || fatal "stack output ServiceQueueName missing"
SERVICE_QUEUE_URL="$(output ServiceQueueUrl)" || fatal "stack output ServiceQueueUrl missing"
SERVICE_DLQ_URL="$(output ServiceDeadLetterQueueUrl)" || fatal "stack output ServiceDeadLetterQueueUrl missing"
FOG_QUEUE_NAME="$(output FogQueueName)" || fatal "stack output FogQueueName missing"
FOG_QUEUE_URL="$(output FogQueueUrl)" || fatal "stack output FogQueueUrl missing"
FOG_DLQ_URL="$(output FogDeadLetterQueueUrl)" || fatal "stack output FogDeadLetterQueueUrl missing"
pass "stack outputs: API $API_URL, queues $SERVICE_QUEUE_NAME and $FOG_QUEUE_NAME"

# 4. GET /api/v3/status answers 200. LocalStack serves an API at <api id>.execute-api.<its host>; the
# request goes to $LOCALSTACK_URL with that Host header, so no DNS entry is needed. The first call may
# wait for the function's container to start.
API_ID="$(printf '%s' "$API_URL" | sed -E 's#^https?://([^./]+)\.execute-api\..*$#\1#')"
LOCALSTACK_PORT="$(printf '%s' "$LOCALSTACK_URL" | sed -E 's#^https?://[^/:]+:?([0-9]*).*$#\1#')"
API_HOST="$API_ID.execute-api.localhost.localstack.cloud${LOCALSTACK_PORT:+:$LOCALSTACK_PORT}"
if [ -z "$API_ID" ] || [ "$API_ID" = "$API_URL" ]; then
  fail "GET /api/v3/status: no API id in ApiUrl $API_URL"
else
  status=000
  deadline=$((SECONDS + SMOKE_WAIT))
  while :; do
    status="$(curl -sS --max-time 30 -o "$WORK/status.json" -w '%{http_code}' \
      -H "Host: $API_HOST" "$LOCALSTACK_URL/api/v3/status" 2>/dev/null)" || status=000
    [ "$status" = 200 ] && break
    [ "$SECONDS" -ge "$deadline" ] && break
    sleep 5
  done
  if [ "$status" = 200 ] && grep -q '"online"' "$WORK/status.json"; then
    pass "GET /api/v3/status: 200 $(cat "$WORK/status.json")"
  else
    fail "GET /api/v3/status: HTTP $status (Host: $API_HOST) $(head -c 300 "$WORK/status.json" 2>/dev/null)"
  fi
fi

# 5. The four FIFO queues exist, and each reconcile queue redrives to its own FIFO DLQ.
queue_attribute() { awsl sqs get-queue-attributes --queue-url "$1" --attribute-names "$2" --query "Attributes.$2"; }
for url in "$SERVICE_QUEUE_URL" "$SERVICE_DLQ_URL" "$FOG_QUEUE_URL" "$FOG_DLQ_URL"; do
  if [ "$(queue_attribute "$url" FifoQueue 2>/dev/null)" = true ]; then
    pass "queue exists and is FIFO: $url"
  else
    fail "queue missing or not FIFO: $url"
  fi
done
for pair in "$SERVICE_QUEUE_URL $SERVICE_DLQ_URL" "$FOG_QUEUE_URL $FOG_DLQ_URL"; do
  read -r url dlq <<<"$pair"
  dlq_arn="$(queue_attribute "$dlq" QueueArn 2>/dev/null)"
  redrive="$(queue_attribute "$url" RedrivePolicy 2>/dev/null)"
  if [ -n "$dlq_arn" ] && [[ "$redrive" == *"$dlq_arn"* ]]; then
    pass "redrive policy of $url targets $dlq_arn"
  else
    fail "redrive policy of $url: '$redrive' does not target '$dlq_arn'"
  fi
done

# 6. One message on the service queue reaches the service-reconcile worker. It names a service that does
# not exist, which the worker treats as done and deletes; so the queue drains and the DLQ stays empty.
# (Receiving it here instead would race the worker's event source.)
smoke="smoke-$(date +%s)"
message_id="$(awsl sqs send-message --queue-url "$SERVICE_QUEUE_URL" \
  --message-body "{\"name\":\"$smoke\",\"generation\":1}" \
  --message-group-id "$smoke" --message-deduplication-id "$smoke" \
  --query MessageId 2>"$WORK/send.err")"
if [ -z "$message_id" ] || [ "$message_id" = None ]; then
  fail "send to $SERVICE_QUEUE_NAME: $(cat "$WORK/send.err")"
else
  pass "sent message $message_id ($smoke) to $SERVICE_QUEUE_NAME"
  # Visible plus in-flight messages on a queue; empty when the call fails.
  depth() {
    local visible in_flight
    read -r visible in_flight < <(awsl sqs get-queue-attributes --queue-url "$1" \
      --attribute-names ApproximateNumberOfMessages ApproximateNumberOfMessagesNotVisible \
      --query 'Attributes.[ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible]' 2>/dev/null)
    [[ "$visible" =~ ^[0-9]+$ && "$in_flight" =~ ^[0-9]+$ ]] && echo $((visible + in_flight))
  }
  deadline=$((SECONDS + SMOKE_WAIT))
  left="$(depth "$SERVICE_QUEUE_URL")"
  while [ "$left" != 0 ] && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 5
    left="$(depth "$SERVICE_QUEUE_URL")"
  done
  dead="$(depth "$SERVICE_DLQ_URL")"
  if [ "$left" = 0 ] && [ "$dead" = 0 ]; then
    pass "the service-reconcile worker consumed the message (queue and DLQ empty)"
  else
    fail "message not consumed within ${SMOKE_WAIT}s: $left on $SERVICE_QUEUE_NAME, $dead on its DLQ (is the event source mapping running? is Lambda able to start containers?)"
  fi
fi

echo
if [ "$FAILED" -eq 0 ]; then
  echo "PASS: fogbridge deployed on LocalStack, status answers 200, queues and worker OK"
  echo "The stack $STACK_NAME stays deployed (its table is retained even by 'cdk destroy')."
  exit 0
fi
echo "FAIL: $FAILED check(s) failed"
exit 1
