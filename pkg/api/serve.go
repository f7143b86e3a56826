package api

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gorilla/mux"
)

// Serve returns the router of a service: every operation of the table
// that service serves, in routing order, handled by the method of h named
// after it (HandlerName), through Handle. The table says what is served,
// the names bind it, as net/rpc binds a receiver's methods: there is no
// route list to keep beside the table. An operation of service that h has
// no method for, or a method of h shaped as a handler that serves no
// operation, is a programming error: Serve panics, so it shows at the
// service's start and in every test that starts it, not as a 404 later.
func Serve(service string, h any) *mux.Router {
	// Matched as sent, as the gateway does: a cleaned path would be
	// answered with a redirect to another resource than the one named.
	r := mux.NewRouter().SkipClean(true)
	v := reflect.ValueOf(h)
	bound := map[string]bool{}
	for _, op := range Operations {
		if op.Service != service {
			continue
		}
		name := op.HandlerName()
		m := v.MethodByName(name)
		if !m.IsValid() || !m.CanInterface() {
			panic(fmt.Sprintf("api: %s has no method %s to serve %s %s (%s)", v.Type(), name, op.Method, op.Path, op.Name))
		}
		f, ok := m.Interface().(func(*Call) (any, error))
		if !ok {
			panic(fmt.Sprintf("api: %s.%s is %s, not a HandlerFunc", v.Type(), name, m.Type()))
		}
		Handle(r, op, f)
		bound[name] = true
	}
	handlerType := reflect.TypeFor[HandlerFunc]()
	for i := range v.NumMethod() {
		if name := v.Type().Method(i).Name; v.Method(i).Type().ConvertibleTo(handlerType) && !bound[name] {
			panic(fmt.Sprintf("api: %s.%s serves no operation of %s", v.Type(), name, service))
		}
	}
	return r
}

// HandlerName is the name of the method that serves op: its name after
// the service, in CamelCase ("tickets.turn_comment" is TurnComment).
func (op Operation) HandlerName() string {
	_, local, _ := strings.Cut(op.Name, ".")
	var b strings.Builder
	for _, word := range strings.Split(local, "_") {
		if word != "" {
			b.WriteString(strings.ToUpper(word[:1]) + word[1:])
		}
	}
	return b.String()
}
