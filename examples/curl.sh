#!/usr/bin/env bash
# The sidecar from the shell. Start it first:   memwrap serve        (127.0.0.1:8765)
# Optional: MEMWRAP_URL, MEMWRAP_API_KEY (when the server has MEMWRAP_API_KEYS), OPENAI_API_KEY (for the proxy).
set -euo pipefail
URL=${MEMWRAP_URL:-http://127.0.0.1:8765}
BANK=${MEMWRAP_BANK:-example-user}
AUTH=()
[[ -n "${MEMWRAP_API_KEY:-}" ]] && AUTH=(-H "Authorization: Bearer $MEMWRAP_API_KEY")
JSON=(-H "Content-Type: application/json")

echo "# health (never needs a key)"
curl -sS "$URL/health"; echo

echo "# retain one item (answered 201 once it is committed)"
curl -sS "${AUTH[@]}" "${JSON[@]}" "$URL/v1/banks/$BANK/memories" \
  -d '{"content": "I moved to Lisbon in March and I am allergic to peanuts.", "document_id": "chat-1:turn-1"}'; echo

echo "# retain a batch"
curl -sS "${AUTH[@]}" "${JSON[@]}" "$URL/v1/banks/$BANK/memories/batch" \
  -d '{"items": [{"content": "My sister Maya visits in May."}, {"content": "I play the cello on Saturdays."}]}'; echo

echo "# recall: .context is the block a model would get"
curl -sS "${AUTH[@]}" "${JSON[@]}" "$URL/v1/banks/$BANK/recall" \
  -d '{"query": "Any dinner ideas for me?", "token_budget": 300}'; echo

echo "# list (paged), bank settings"
curl -sS "${AUTH[@]}" "$URL/v1/banks/$BANK/memories?limit=2&offset=0"; echo
curl -sS "${AUTH[@]}" "${JSON[@]}" -X PATCH "$URL/v1/banks/$BANK" -d '{"defense_policy": "block"}'; echo

if [[ -n "${OPENAI_API_KEY:-}" ]]; then
  echo "# the memory proxy: an OpenAI request with X-Memwrap-Bank; your OpenAI key passes through untouched"
  KEY=()
  [[ -n "${MEMWRAP_API_KEY:-}" ]] && KEY=(-H "X-Memwrap-Key: $MEMWRAP_API_KEY")
  curl -sS -N "${KEY[@]}" "${JSON[@]}" "$URL/v1/chat/completions" \
    -H "Authorization: Bearer $OPENAI_API_KEY" -H "X-Memwrap-Bank: $BANK" -H "X-Memwrap-Session: curl-demo" \
    -d '{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "Suggest a dinner for me."}]}'
  echo
fi
