package service_test

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"svcbridge/document"
	"svcbridge/pgtest"
	"svcbridge/service"
)

// Fuzz targets: any input yields a Patch or a *ValidationError, never a
// panic, and every string a decoder accepts is one PostgreSQL stores
// (SQLite stores any bytes, so PostgreSQL is the stricter judge; the api
// fuzz target writes through both real stores).

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"checkout","type":"microservice","resource":"orders/checkout","targetPort":8080,"tags":["checkout"]}`,
		`{"targetPort":8080.0,"servicePort":1e400}`, `[]`, `null`, ``, `{"tags":[1]}`, `{} {}`,
		`{"targetPort":-99999999999999999999999999}`, `{"name":"\ud800"}`, `{"tags":["a\u0000"]}`,
		"{\"name\":\"\xff\"}", `{"name":"a","name":"a"}`, `{"targetport":1}`, `{"tags":["a","a"]}`,
		`{"tags":["\ud83d\ude00","\udc00"]}`, `{"tags":["a\u202e"]}`, `{"kubernetes":{"annotations":{"a":"\ud800"}}}`,
		`{"distribution":` + strings.Repeat("[", service.MaxDepth-1) + strings.Repeat("]", service.MaxDepth-1) + `}`,
		`{"distribution":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`,
	} {
		f.Add([]byte(s))
	}
	pg := postgres(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := service.DecodeJSON(body)
		checkDecodeResult(t, pg, p, err)
	})
}

func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{
		service.CheckoutYAML, "", "kind: Service\n", "kind: Service\nmetadata:\nspec:\n",
		"kind: Service\nmetadata: {tags: ~}\nspec: {}\n", service.CheckoutYAML + "---\n" + service.CheckoutYAML,
		service.BillionLaughs(3), "kind: Service\nmetadata: &m {tags: *m}\nspec: {<<: *m}\n",
		"kind: Service\nmetadata: {}\nspec: {targetPort: 99999999999999999999999}\n",
		"kind: Service\nmetadata: {tags: [\"\\0\", a, a]}\nspec: {targetport: 1}\n",
		"kind: Service\nmetadata: {tags: [\"\\ud800\", \"\\u202e\"]}\nspec: {kubernetes: {annotations: {a: \"\\u200b\"}}}\n",
		"kind: Service\nmetadata: {}\nspec: {distribution: " + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + "}\n",
	} {
		f.Add([]byte(s))
	}
	pg := postgres(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := service.DecodeYAML(body)
		checkDecodeResult(t, pg, p, err)
	})
}

// postgres opens a fresh PostgreSQL database for the fuzz target.
func postgres(f *testing.F) *sql.DB {
	db, err := sql.Open("postgres", pgtest.NewDB(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	return db
}

func checkDecodeResult(t *testing.T, pg *sql.DB, p service.Patch, err error) {
	t.Helper()
	if err != nil {
		var ve *service.ValidationError
		if !errors.As(err, &ve) || ve.Message == "" {
			t.Fatalf("error %v (%T) is not a *ValidationError with a message", err, err)
		}
		if !reflect.DeepEqual(p, service.Patch{}) {
			t.Fatalf("error %v came with a non-empty patch %+v", err, p)
		}
		return
	}
	// A decoded patch can always be applied and validated without panicking.
	s := p.Apply(service.Spec{})
	_ = service.Validate(s, service.ControlPlaneRemote)
	_ = service.Validate(s, service.ControlPlaneKubernetes)
	// Every string it carries passes the text rule and is text PostgreSQL
	// accepts.
	texts := append([]string{s.Name, s.Type, s.Resource, s.DefaultBridge}, s.Tags...)
	if s.K8sType != nil {
		texts = append(texts, *s.K8sType)
	}
	if s.Kubernetes != nil {
		texts = append(texts, slices.Collect(maps.Values(s.Kubernetes.Annotations))...)
	}
	for _, text := range texts {
		if p := document.TextProblem(text); p != "" {
			t.Fatalf("the decoder accepted %q, which %s", text, p)
		}
		var back string
		if err := pg.QueryRowContext(context.Background(), `SELECT $1::text`, text).Scan(&back); err != nil || back != text {
			t.Fatalf("PostgreSQL does not store %q, which the decoder accepted: %v (read back %q)", text, err, back)
		}
	}
}
