// Package conversationtest holds a recorded conversation and the request
// that turns one of its turns into a regression test, shared by the use
// case's tests (app) and the edge's (ports).
package conversationtest

import "fmt"

// Production is a transcript as the hosted platform's GET conversation
// answers it: the user asks, the agent calls a tool, gets its result in a
// message of its own, and then states the wrong day.
const Production = `[
 {"role":"agent","message":"Hi, this is Acme support.","time_in_call_secs":0,"tool_calls":[],"source_medium":"audio"},
 {"role":"user","message":"Where is my order 4521?","time_in_call_secs":4,"tool_calls":[],"conversation_turn_metrics":{"metrics":{}}},
 {"role":"agent","message":null,"time_in_call_secs":6,"agent_metadata":{"agent_id":"agent_1","workflow_node_id":"node_orders"},
  "tool_calls":[{"type":"webhook","request_id":"call_1","tool_name":"get_order_status","params_as_json":"{\"order_id\":\"4521\"}","tool_has_been_called":true}]},
 {"role":"agent","message":null,"time_in_call_secs":7,
  "tool_results":[{"request_id":"call_1","tool_name":"get_order_status","result_value":"Order 4521 shipped Monday, arrives Thursday.","is_error":false,"tool_has_been_called":true,"type":"webhook"}]},
 {"role":"agent","message":"Your order arrives tomorrow.","time_in_call_secs":8,"agent_metadata":{"agent_id":"agent_1","workflow_node_id":"node_orders"}},
 {"role":"user","message":"Tomorrow? Thanks.","time_in_call_secs":12}
]`

// FromConversation is a from-conversation request body on Production,
// converting turn, with extra members appended (",\"name\":...").
func FromConversation(turn int, extra string) string {
	return fmt.Sprintf(`{"agent_id":"agent_1","conversation_id":"conv_9","transcript":%s,"turn_index":%d%s}`, Production, turn, extra)
}
