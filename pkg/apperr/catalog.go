package apperr

import (
	"fmt"
	"strings"
)

// The catalog: every application error the platform answers, declared
// once. Callers return these (errors.Is compares a variable by identity);
// an error whose message carries a value is built by a function here. A
// status is stable: clients match on it. Several entries may share a
// status when their messages tell the caller different things.

// The request as a whole (pkg/apperr, pkg/httpx, pkg/api).
var (
	// MalformedJSONAfterValue refuses a body with more than one JSON value.
	MalformedJSONAfterValue = InvalidError("malformed_json", "The request body has data after the JSON value.")
	// NotJSONObject refuses a body meant to be an object that is not one.
	NotJSONObject = InvalidError("malformed_json", "The request body is not a JSON object.")
	// UnreadableBody answers a body the connection failed to deliver.
	UnreadableBody = InvalidError("unreadable_body", "The request body could not be read.")
	// MalformedForward answers a forwarded request whose request line a
	// service cannot read (a gateway of another version, a hand-made
	// message on the bus).
	MalformedForward = InvalidError("bad_request", "The forwarded request is malformed.")
	// ResourceNotFound answers an id that names nothing the edge knows.
	ResourceNotFound = NotFoundError("not_found", "No resource has this id.")
	// ServiceUnavailable answers while a store elects a leader or restarts.
	ServiceUnavailable = New(Unavailable, "service_unavailable", "The service is briefly unavailable; retry in a moment.")
	// InternalError answers a bug or an unexpected failure; its cause is
	// logged, never shown.
	InternalError = New(Internal, "internal_error", "The server failed to process the request.")
)

// RouteNotFound answers a path no route matches.
func RouteNotFound(method, path string) *Error {
	return NotFoundError("route_not_found", "No route matches "+method+" "+path+".")
}

// MethodNotAllowed answers a method a route does not take.
func MethodNotAllowed(method, path string) *Error {
	return New(WrongMethod, "method_not_allowed", "Method "+method+" is not allowed on "+path+".")
}

// UpstreamTimedOut answers a request service did not answer in time.
func UpstreamTimedOut(service string) *Error {
	return New(UpstreamTimeout, "upstream_timeout", "The "+service+" service did not answer in time.")
}

// UpstreamUnreachable answers a request that could not be sent to service.
func UpstreamUnreachable(service string) *Error {
	return New(Upstream, "upstream_failure", "The "+service+" service could not be reached.")
}

// UpstreamMalformed answers a request service answered with malformed data.
func UpstreamMalformed(service string) *Error {
	return New(Upstream, "upstream_failure", "The "+service+" service answered malformed data.")
}

// ResponseAborted answers a request whose service failed while writing
// its answer.
var ResponseAborted = New(Upstream, "upstream_failure", "The service failed while writing its response.")

// UpstreamUnavailable answers a request no replica of service listens for.
func UpstreamUnavailable(service string) *Error {
	return New(Unavailable, "service_unavailable", "The "+service+" service is not available; retry later.")
}

// BusDisconnected answers a request for service while the gateway has
// no connection to NATS, and found none again within a few seconds.
func BusDisconnected(service string) *Error {
	return New(Unavailable, "service_unavailable", "The gateway has lost its connection to the platform's message bus, so the "+service+" service cannot be reached; retry shortly.")
}

// GatewayStopping answers a poll the gateway will not wait for: it is
// stopping (a rolling update); another replica answers it sent again.
var GatewayStopping = New(Unavailable, "service_unavailable", "This gateway is stopping; send the request again.")

// UpstreamLost answers a request that is not safe to send twice and was
// lost with its NATS connection (its server died, or the connection left
// a server cut off from its cluster): whether service acted on it is
// unknown.
func UpstreamLost(service string) *Error {
	return New(Unavailable, "service_unavailable", "The connection to the "+service+" service was lost with the request in flight; whether it took effect is unknown. Retry it with an Idempotency-Key.")
}

// MalformedJSON refuses a body that does not parse; why says where.
func MalformedJSON(why string) *Error {
	return InvalidError("malformed_json", "The request body is not valid JSON: "+why+".")
}

// BodyTooLarge refuses a body over max bytes.
func BodyTooLarge(max int64) *Error {
	return New(TooLarge, "body_too_large", fmt.Sprintf("The request body exceeds %d bytes.", max))
}

// UnsupportedContentEncoding refuses a body sent compressed (or in any
// coding but identity): read as it is, a gzipped body would be answered
// as malformed JSON, and one whose coding was only named would be
// decoded as if none were.
func UnsupportedContentEncoding(coding string) *Error {
	if len(coding) > 40 {
		coding = coding[:40] + "…" // the caller's header, echoed: bounded
	}
	return New(UnsupportedBody, "unsupported_content_encoding", fmt.Sprintf("Content-Encoding %q is not supported: send the request body uncompressed, without the header.", coding))
}

// MissingPermission refuses a caller that holds none of perms.
func MissingPermission(perms ...string) *Error {
	return ForbiddenError("missing_permission", "The API key lacks the permission this operation needs ("+strings.Join(perms, " or ")+").")
}

// The caller (the gateway, pkg/principal).
var (
	// NotAuthenticated refuses a request that did not come through the
	// gateway.
	NotAuthenticated     = New(Unauthenticated, "unauthenticated", "The request carries no authenticated caller.")
	CredentialsInURL     = New(Unauthenticated, "credentials_in_url", "API keys are accepted only in the x-api-key header, never in the URL.")
	AmbiguousCredentials = New(Unauthenticated, "ambiguous_credentials", "Send one API key, once: in x-api-key (or xi-api-key, the same key) or in Authorization, not both.")
	MissingAPIKey        = New(Unauthenticated, "missing_api_key", "Send your API key in the x-api-key header.")
	InvalidAPIKey        = New(Unauthenticated, "invalid_api_key", "The API key is not valid.")
	APIKeyRevoked        = New(Unauthenticated, "api_key_revoked", "The API key has been revoked.")
	APIKeyDisabled       = New(Unauthenticated, "api_key_disabled", "The API key is disabled.")
	APIKeyExpired        = New(Unauthenticated, "api_key_expired", "The API key has expired.")
	IPNotAllowed         = ForbiddenError("ip_not_allowed", "The API key may not be used from this address.")
)

// The console's session (the gateway's /console): a sealed cookie that
// stands for the key, honoured only with its CSRF token, from the
// gateway's own origin.
var (
	ConsoleSignedOut      = New(Unauthenticated, "console_signed_out", "Sign in to the console with an API key.")
	ConsoleSessionInvalid = New(Unauthenticated, "console_session_invalid", "The console session is not valid; sign in again.")
	ConsoleSessionExpired = New(Unauthenticated, "console_session_expired", "The console session has expired; sign in again.")
	ConsoleSessionEnded   = New(Unauthenticated, "console_session_ended", "The console session was signed out; sign in again.")
	ConsoleKeyMissing     = InvalidError("console_api_key_missing", "Send the API key to sign in with as api_key.")
	CSRFTokenInvalid      = ForbiddenError("csrf_token_invalid", "A console request must carry the X-CSRF-Token its sign-in answered.")
	CrossOriginRequest    = ForbiddenError("cross_origin_request", "The console takes requests from its own origin only.")
	// ConsoleUnavailable answers a sign-in to a gateway without the
	// deployment secret, which seals the session.
	ConsoleUnavailable = New(Unavailable, "console_unavailable", "Console sign-in needs the deployment secret (VOICEAI_SECRET_KEY) on the gateway.")
)

// WorkspaceForbidden refuses a key used for workspace ws, not its own.
func WorkspaceForbidden(ws string) *Error {
	return ForbiddenError("workspace_forbidden", "The API key does not belong to workspace "+ws+".")
}

// RateLimitExceeded refuses a request over the key's nearest limit: limit
// requests per window.
func RateLimitExceeded(limit int64, window string) *Error {
	return New(RateLimited, "rate_limit_exceeded", fmt.Sprintf("Rate limit exceeded: %d requests per %s.", limit, window))
}

// A service process's request slots (pkg/natsx).
var (
	// ServiceAtCapacity answers a request a service process has no free
	// slot for.
	ServiceAtCapacity = New(Unavailable, "service_at_capacity", "The service is handling as many requests as it can; retry in a moment.")
	// WorkspaceAtCapacity refuses a request of a workspace that already
	// holds its share of a service's request slots.
	WorkspaceAtCapacity = New(RateLimited, "too_many_concurrent_requests",
		"This workspace has as many requests in progress as a service takes from one workspace; retry once some have finished.")
)

// The platform's storage (the all-in-one's disk guard, JetStream's
// storage limit).
var (
	// StorageFull refuses a write while the storage under the platform
	// is (nearly) full: nothing was written, reads still work, and writes
	// resume by themselves once space is freed.
	StorageFull = New(Unavailable, "storage_full",
		"The platform's storage is full: writes are refused until space is freed; reads still work.")
)

// Every aggregate.
var (
	// ConcurrentUpdate answers a write that lost a race with another.
	ConcurrentUpdate = ConflictError("concurrent_update", "The resource changed concurrently; retry.")
)

// Agents.
var (
	AgentNotFound = NotFoundError("agent_not_found", "No agent with that id exists in this workspace.")
	// SecretNotFound answers a secret id not in the caller's workspace.
	SecretNotFound = NotFoundError("secret_not_found", "No workspace secret with that id exists in this workspace.")
	// SecretBindingForbidden refuses a caller who is no workspace admin a
	// configuration that sends a workspace secret, or an environment
	// variable of the runners, somewhere an admin did not choose: whoever
	// picks the endpoint receives the value.
	SecretBindingForbidden = ForbiddenError("secret_binding_forbidden", "Only a workspace admin (workspace_write) may choose where a workspace secret or a runner environment variable is sent: "+
		"this configuration sends one (custom_llm api_key or request_headers) to an endpoint or header an admin did not set.")
)

// SecretInUse refuses to delete a secret agents still authenticate with:
// they would fail every run that calls their endpoint.
func SecretInUse(agentIDs []string, more bool) *Error {
	list := strings.Join(agentIDs, ", ")
	if more {
		list += " and more"
	}
	return ConflictError("secret_in_use", "The secret is used by agents "+list+"; change their configuration to stop using it, then delete it.")
}

// Identity: service accounts, API keys, members.
var (
	ServiceAccountNotFound = NotFoundError("service_account_not_found", "No service account with that id exists in this workspace.")
	ServiceAccountExists   = ConflictError("service_account_exists", "A service account with that id already exists.")
	APIKeyNotFound         = NotFoundError("api_key_not_found", "No API key with that id exists for this service account.")
	APIKeyExists           = ConflictError("api_key_exists", "An API key with that id already exists.")
	// PermissionEscalation refuses a key given more than its caller holds.
	PermissionEscalation = ForbiddenError("permission_escalation", "A key cannot grant permissions the caller does not hold.")
	MemberExists         = ConflictError("member_exists", "A member with that e-mail address already belongs to this workspace.")
	MemberNotFound       = NotFoundError("member_not_found", "No member with that e-mail address belongs to this workspace.")
)

// APIKeyAlreadyCreated answers a retried create: its secret was shown once.
func APIKeyAlreadyCreated(keyID string) *Error {
	return ConflictError("api_key_already_created", "This command already created key "+keyID+"; its secret was shown once and cannot be shown again.")
}

// Testing: tests, folders, invocations.
var (
	TestNotFound       = NotFoundError("test_not_found", "No test with that id exists in this workspace.")
	FolderNotFound     = NotFoundError("folder_not_found", "No test folder with that id exists in this workspace.")
	InvocationNotFound = NotFoundError("test_invocation_not_found", "No test invocation with that id exists in this workspace.")
	InvocationFinished = ConflictError("invocation_finished", "Every run of this invocation has finished; there is nothing to cancel.")
	InvocationRunning  = ConflictError("invocation_running", "Runs of this invocation are still pending; resubmit once it has finished or been cancelled.")
	TestRunNotFound    = NotFoundError("test_run_not_found", "No run with that id exists in this test invocation.")
	RunNotFinished     = ConflictError("run_not_finished", "This run has no result yet; label it once it has finished.")
	// ConversationNotAnalysed refuses a label of a conversation whose
	// evaluation the judge never analysed: there is no verdict to label.
	ConversationNotAnalysed = ConflictError("conversation_not_analysed", "This conversation has no analysis to label; run POST /v1/convai/conversations/{conversation_id}/analysis/run first.")
	LoadTestNotFound        = NotFoundError("load_test_not_found", "No load test with that id exists in this workspace.")
)

// QuotaExceeded refuses a run-tests or a resubmit that would take a
// workspace's quota (what, e.g. "active invocations") over its limit: the
// request would make it would.
func QuotaExceeded(quota string, limit, would int64) *Error {
	return New(RateLimited, "quota_exceeded", fmt.Sprintf("Workspace quota exceeded: %s are limited to %d per workspace, and this request would make them %d. "+
		"Retry once some of the workspace's invocations have completed, or cancel some.", quota, limit, would))
}

// InvocationExpired answers an invocation older than the run retention
// (after, e.g. "90 days"): its runs were deleted.
func InvocationExpired(after string) *Error {
	return NotFoundError("invocation_expired", "This test invocation is older than the run retention: its runs were deleted after "+after+
		". Its summary (counts of passed and failed runs) stays in the invocation listing.")
}

// FolderNotEmpty refuses to delete a folder holding n children without force.
func FolderNotEmpty(n int) *Error {
	return ConflictError("folder_not_empty", fmt.Sprintf("The folder holds %d tests or folders; delete with force=true to delete them too.", n))
}

// Tickets.
var (
	TicketNotFound = NotFoundError("ticket_not_found", "No triage ticket with that id exists in this workspace.")
	// ConversationNotFound answers a ticket raised on an unknown
	// conversation without an agent.
	ConversationNotFound = NotFoundError("conversation_not_found", "No conversation with that id is known; pass agent_id to raise a ticket on it anyway.")
	// ConversationUnknown answers a read of a conversation the platform
	// has not heard of in the caller's workspace.
	ConversationUnknown = NotFoundError("conversation_not_found", "No conversation with that id is known in this workspace.")
	NotTicketOwner      = ForbiddenError("not_ticket_owner", "Only the ticket's creator or a workspace admin can delete it.")
	// TicketMergedOnlyByMerge refuses a PATCH to status merged.
	TicketMergedOnlyByMerge = ConflictError("invalid_status_transition", "A ticket becomes merged only through the merge operation.")
	// TicketMergedIsFinal refuses a change or a comment on a merged ticket:
	// its work goes on on the ticket it was merged into.
	TicketMergedIsFinal = ConflictError("ticket_already_merged", "The ticket was merged into another (its merged_into_ticket_id) and takes no more changes or comments; change that ticket instead.")
	// ConversationTagNotFound answers an unknown (or deleted, or another
	// workspace's) conversation tag, wherever one is named.
	ConversationTagNotFound = NotFoundError("conversation_tag_not_found", "No conversation tag with that id exists in this workspace.")
)

// TicketTransition refuses a status change the workflow does not allow.
func TicketTransition(from, to string) *Error {
	return ConflictError("invalid_status_transition", "A ticket cannot go from "+from+" to "+to+".")
}

// TicketCannotAbsorb refuses a merge into a ticket of status.
func TicketCannotAbsorb(status string) *Error {
	return ConflictError("invalid_status_transition", "A "+status+" ticket cannot absorb others.")
}

// TicketNotMergeable refuses a merge of ticket id, which is status.
func TicketNotMergeable(id, status string) *Error {
	return ConflictError("invalid_status_transition", "Ticket "+id+" is "+status+"; only open or in-progress tickets can be merged.")
}

// Webhooks.
var (
	// WebhookNotFound answers an id not in the caller's workspace (another
	// workspace's webhooks included).
	WebhookNotFound = NotFoundError("webhook_not_found", "No webhook with that id exists in this workspace.")
	// DeliveryNotFound answers an id the webhook's log does not hold
	// (another webhook's deliveries included).
	DeliveryNotFound = NotFoundError("delivery_not_found", "No delivery with that id exists in this webhook's log.")
	// WorkspaceNotFound answers ingestion for a workspace id no subject
	// can carry.
	WorkspaceNotFound = NotFoundError("workspace_not_found", "The workspace id cannot carry events.")
	WebhookInactive   = ConflictError("webhook_inactive", "The webhook is not active; activate it before resending its deliveries.")
	NotARelayWebhook  = ConflictError("not_a_relay_webhook", "This webhook has a url; only a relay webhook's deliveries are polled.")
)

// WorkspaceLimitReached refuses a create that would give the workspace
// more than limit of what (e.g. "webhooks"): a bound each workspace has so
// that none makes the work or memory shared by all (a fan-out to every
// webhook of every event, every key in every gateway) as large as it
// likes. remedy says how to make room (e.g. "delete one before creating
// another").
func WorkspaceLimitReached(what string, limit int, remedy string) *Error {
	return ConflictError("workspace_limit_reached", fmt.Sprintf("A workspace may have at most %d %s; %s.", limit, what, remedy))
}

// Catalog is every entry above, those built by a function shown with
// placeholder arguments: for the catalog's test and the API document.
var Catalog = []*Error{
	MalformedJSON("<why>"), MalformedJSONAfterValue, NotJSONObject, UnreadableBody,
	BodyTooLarge(0), UnsupportedContentEncoding("<coding>"), ResourceNotFound, MissingPermission("<permission>"),
	ServiceUnavailable, InternalError, RouteNotFound("<method>", "<path>"), MethodNotAllowed("<method>", "<path>"),
	UpstreamUnavailable("<service>"), BusDisconnected("<service>"), GatewayStopping, UpstreamLost("<service>"), UpstreamTimedOut("<service>"), UpstreamUnreachable("<service>"),
	UpstreamMalformed("<service>"), ResponseAborted, MalformedForward,
	NotAuthenticated, CredentialsInURL, AmbiguousCredentials, MissingAPIKey, InvalidAPIKey,
	APIKeyRevoked, APIKeyDisabled, APIKeyExpired, IPNotAllowed, WorkspaceForbidden("<workspace_id>"),
	ConsoleSignedOut, ConsoleSessionInvalid, ConsoleSessionExpired, ConsoleSessionEnded, ConsoleKeyMissing, CSRFTokenInvalid, CrossOriginRequest,
	ConsoleUnavailable,
	RateLimitExceeded(0, "<window>"), ServiceAtCapacity, WorkspaceAtCapacity, StorageFull,
	ConcurrentUpdate,
	AgentNotFound, SecretNotFound, SecretInUse([]string{"<agent_id>"}, false), SecretBindingForbidden,
	ServiceAccountNotFound, ServiceAccountExists, APIKeyNotFound, APIKeyExists,
	APIKeyAlreadyCreated("<key_id>"), PermissionEscalation, MemberExists, MemberNotFound,
	TestNotFound, FolderNotFound, InvocationNotFound, InvocationFinished, InvocationRunning, TestRunNotFound, RunNotFinished, ConversationNotAnalysed, LoadTestNotFound,
	FolderNotEmpty(0), QuotaExceeded("<quota>", 0, 0), WorkspaceLimitReached("<what>", 0, "<remedy>"), InvocationExpired("<retention>"),
	TicketNotFound, ConversationNotFound, ConversationUnknown, NotTicketOwner, TicketMergedOnlyByMerge, TicketMergedIsFinal,
	ConversationTagNotFound,
	TicketTransition("<from>", "<to>"), TicketCannotAbsorb("<status>"), TicketNotMergeable("<id>", "<status>"),
	WebhookNotFound, DeliveryNotFound, WorkspaceNotFound, WebhookInactive, NotARelayWebhook,
}
