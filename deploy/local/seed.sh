#!/usr/bin/env bash
# Seeds the demo content of `make run` through the gateway with the admin certificate: a publisher and an
# application (their ids kept in <state>/demo-app-id), a leaderboard and a weekly tournament, achievements,
# gift types, a slot machine and a dice game, and a sandbox currency. Every step is create-or-replace or
# tolerates "already exists", so running it on every `make run` is harmless. The gateway and the state directory
# are run.sh's (RAVE_LOCAL_GATEWAY_PORT, RAVE_LOCAL_DIR; default 7443 and .run).
#
#   deploy/local/seed.sh BIN_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$1
state=${RAVE_LOCAL_DIR:-.run}
certs=${RAVE_CERT_DIR:-$state/certs}
admin=(--target "127.0.0.1:${RAVE_LOCAL_GATEWAY_PORT:-7443}" --ca "$certs/ca.pem" --cert "$certs/admin.pem"
    --key "$certs/admin-key.pem")
# Operator calls carry only the admin certificate: a player login stored by `ravectl login` (perhaps from before a
# `make reset`, signed by keys this stack never had) must not ride along.
XDG_CONFIG_HOME=$(mktemp -d /tmp/rave-seed.XXXXXX)
export XDG_CONFIG_HOME
trap 'rm -rf "$XDG_CONFIG_HOME"' EXIT

# Calls METHOD with JSON as the admin; "already exists" counts as success (the demo was seeded before).
call() {
    local output
    if output=$("$bin/ravectl" call "$1" --json "$2" "${admin[@]}" 2>&1); then
        printf '%s\n' "$output"
    elif grep -qiE "already_?exists" <<<"$output"; then
        return 0
    else
        echo "seed: $1 failed: $output" >&2
        return 1
    fi
}

json_field() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }

if [ ! -s "$state/demo-app-id" ]; then
    publisher=$(call rave.identity.v1.IdentityAdmin/CreatePublisher '{"name": "Demo Studio"}' |
        json_field '["publisher"]["publisherId"]')
    call rave.identity.v1.IdentityAdmin/CreateApplication "{\"publisherId\": \"$publisher\", \"name\": \"Demo Game\"}" |
        json_field '["application"]["appId"]' >"$state/demo-app-id.tmp"
    mv "$state/demo-app-id.tmp" "$state/demo-app-id"
fi
app=$(cat "$state/demo-app-id")

call rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard "{\"appId\": \"$app\", \"definition\":
    {\"key\": \"high-scores\", \"name\": \"High Scores\", \"sorter\": 1, \"active\": true}}" >/dev/null
call rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard "{\"appId\": \"$app\", \"definition\":
    {\"key\": \"weekly\", \"name\": \"Weekly Tournament\", \"sorter\": 2, \"resetInterval\": \"RESET_INTERVAL_WEEKLY\",
     \"active\": true}}" >/dev/null
call rave.leaderboards.v1.LeaderboardsAdmin/DefineAchievement "{\"appId\": \"$app\", \"definition\":
    {\"key\": \"first-score\", \"name\": \"First Score\", \"description\": \"Submit a first score\"}}" >/dev/null
call rave.leaderboards.v1.LeaderboardsAdmin/DefineAchievement "{\"appId\": \"$app\", \"definition\":
    {\"key\": \"high-roller\", \"name\": \"High Roller\", \"description\": \"Win 100 GOLD in one spin\"}}" >/dev/null

if [ -x "$bin/gifts" ]; then
    call rave.gifts.v1.GiftsAdmin/CreateGiftType "{\"appId\": \"$app\", \"giftType\":
        {\"key\": \"life\", \"name\": \"Extra Life\", \"requestable\": true}}" >/dev/null
    call rave.gifts.v1.GiftsAdmin/CreateGiftType "{\"appId\": \"$app\", \"giftType\":
        {\"key\": \"coins\", \"name\": \"100 Coins\", \"dailyLimitPerSender\": 5}}" >/dev/null
fi

call rave.wallet.v1.WalletAdmin/CreateCurrency '{"code": "GOLD", "decimals": 2}' >/dev/null
# Return to player 0.953125 exactly (the wallet computes it from the definition: ListGames shows it).
call rave.wallet.v1.WalletAdmin/CreateGame '{"game": {"gameId": "demo-slots", "name": "Demo Slots", "slot": {
    "rows": 3,
    "reels": [
        {"symbols": ["cherry", "lemon", "bell", "cherry", "seven", "lemon", "cherry", "bell"]},
        {"symbols": ["lemon", "cherry", "bell", "seven", "cherry", "lemon", "bell", "cherry"]},
        {"symbols": ["bell", "cherry", "lemon", "cherry", "seven", "bell", "lemon", "cherry"]}],
    "paylines": [{"rows": [1, 1, 1]}, {"rows": [0, 0, 0]}, {"rows": [2, 2, 2]}, {"rows": [0, 1, 2]}, {"rows": [2, 1, 0]}],
    "paytable": [
        {"symbol": "cherry", "count": 2, "multiplier": 1}, {"symbol": "cherry", "count": 3, "multiplier": 5},
        {"symbol": "lemon", "count": 3, "multiplier": 11}, {"symbol": "bell", "count": 3, "multiplier": 15},
        {"symbol": "seven", "count": 3, "multiplier": 100}]}}}' >/dev/null
call rave.wallet.v1.WalletAdmin/CreateGame '{"game": {"gameId": "demo-dice", "name": "Demo Dice", "odds": {
    "sides": 6, "winningNumbers": 1, "multiplierNumerator": 57, "multiplierDenominator": 10}}}' >/dev/null
echo "$app"
