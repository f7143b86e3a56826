package wire

// RelayNext answers a relay poll (POST /v1/voiceai/webhooks/{id}/relay/next):
// the next delivery of a webhook without a url, or none within the wait.
type RelayNext struct {
	Delivery *RelayDelivery `json:"delivery"`
}

// RelayDelivery is a delivery handed to a polling client: the token its
// outcome is reported with, and the request to forward.
type RelayDelivery struct {
	Token   string            `json:"token"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}
