package mongox

import "go.mongodb.org/mongo-driver/v2/bson"

// Key is one field of a listing's order and the cursor's value of it.
type Key struct {
	Field string
	Value any
}

// Order sorts by fields, all in one direction. The last field must make
// the order total (usually _id), so that a cursor names one place.
func Order(descending bool, fields ...string) bson.D {
	dir := 1
	if descending {
		dir = -1
	}
	sort := make(bson.D, len(fields))
	for i, f := range fields {
		sort[i] = bson.E{Key: f, Value: dir}
	}
	return sort
}

// After is the keyset condition of a page: the documents strictly after
// the cursor keys in Order(descending, their fields...). Each level is
// "beyond this field, or equal to it and after on the rest", the shape an
// index on the fields serves.
func After(descending bool, keys ...Key) bson.D {
	cmp := "$gt"
	if descending {
		cmp = "$lt"
	}
	first := keys[0]
	beyond := bson.D{{Key: first.Field, Value: bson.D{{Key: cmp, Value: first.Value}}}}
	if len(keys) == 1 {
		return beyond
	}
	tie := append(bson.D{{Key: first.Field, Value: first.Value}}, After(descending, keys[1:]...)...)
	return bson.D{{Key: "$or", Value: bson.A{beyond, tie}}}
}
