// Package routermgmt drives a running skupper router (skrouterd) through
// its AMQP 1.0 management: requests to the address "$management" with the
// operation and entity type as application properties, answered on a
// reply address of the client's own with a statusCode and
// statusDescription (the protocol skmanage and Skupper's config-sync use).
package routermgmt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/Azure/go-amqp"

	"svcbridge/routerconfig"
)

// schemaPrefix qualifies entity types in management requests.
const schemaPrefix = "io.skupper.router."

// queryPage is how many rows one QUERY asks for, as skmanage does.
const queryPage = 500

// Error is a management request the router refused or failed: a 4xx for
// a request it will not carry out (a duplicate name, an unknown attribute,
// no such entity), a 5xx for its own failure.
type Error struct {
	Operation   string
	Status      int
	Description string
}

func (e *Error) Error() string {
	return fmt.Sprintf("router refused %s: %d %s", e.Operation, e.Status, e.Description)
}

// Refused reports whether err is the router refusing a request as invalid
// (a 4xx): retrying the same request gets the same answer.
func Refused(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status >= 400 && e.Status < 500
}

// NotFound reports whether err is the router saying the entity is gone.
func NotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == 404
}

// Client is one management connection to a router. Its requests run one
// at a time.
type Client struct {
	conn *amqp.Conn
	snd  *amqp.Sender
	rcv  *amqp.Receiver
	mu   sync.Mutex
	seq  atomic.Uint64
}

// Dial opens a management connection to the router's normal listener at
// addr (host:port), anonymously as the router's own tools do.
func Dial(ctx context.Context, addr string) (*Client, error) {
	conn, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		return nil, err
	}
	return open(ctx, conn)
}

// Over opens a management connection over nc, a connection to the router's
// normal listener that the caller made (from another network namespace).
func Over(ctx context.Context, nc net.Conn) (*Client, error) {
	conn, err := amqp.NewConn(ctx, nc, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return open(ctx, conn)
}

func open(ctx context.Context, conn *amqp.Conn) (*Client, error) {
	c := &Client{conn: conn}
	if err := c.open(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) open(ctx context.Context) error {
	sess, err := c.conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	if c.rcv, err = sess.NewReceiver(ctx, "", &amqp.ReceiverOptions{DynamicAddress: true, Credit: 10}); err != nil {
		return err
	}
	c.snd, err = sess.NewSender(ctx, "$management", nil)
	return err
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Done is closed when the connection ends: the router stopped, or the
// network broke.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// call sends one request and waits for its answer.
func (c *Client) call(ctx context.Context, op string, props map[string]any, body any) (*amqp.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := strconv.FormatUint(c.seq.Add(1), 10)
	reply := c.rcv.Address()
	props["operation"] = op
	msg := &amqp.Message{
		Properties:            &amqp.MessageProperties{MessageID: id, ReplyTo: &reply},
		ApplicationProperties: props,
		Value:                 body,
	}
	if err := c.snd.Send(ctx, msg, nil); err != nil {
		return nil, err
	}
	for {
		m, err := c.rcv.Receive(ctx, nil)
		if err != nil {
			return nil, err
		}
		_ = c.rcv.AcceptMessage(ctx, m)
		// An answer to an earlier request whose caller gave up is dropped.
		if m.Properties != nil && m.Properties.CorrelationID != nil && fmt.Sprint(m.Properties.CorrelationID) != id {
			continue
		}
		status, _ := toInt(m.ApplicationProperties["statusCode"])
		if status < 200 || status >= 300 {
			desc, _ := m.ApplicationProperties["statusDescription"].(string)
			return nil, &Error{Operation: op, Status: status, Description: desc}
		}
		return m, nil
	}
}

// Query lists every entity of typ ("tcpListener", ...) with all its
// attributes, paging as skmanage does.
func (c *Client) Query(ctx context.Context, typ string) ([]routerconfig.Entity, error) {
	var out []routerconfig.Entity
	for offset := 0; ; offset += queryPage {
		m, err := c.call(ctx, "QUERY", map[string]any{
			"type": "org.amqp.management", "name": "self",
			"entityType": schemaPrefix + typ, "offset": int64(offset), "count": int64(queryPage),
		}, map[string]any{"attributeNames": []any{}})
		if err != nil {
			return nil, err
		}
		body, _ := m.Value.(map[string]any)
		names, _ := body["attributeNames"].([]any)
		rows, _ := body["results"].([]any)
		for _, r := range rows {
			vals, _ := r.([]any)
			e := routerconfig.Entity{Type: typ, Attrs: map[string]any{}}
			for i, n := range names {
				if k, ok := n.(string); ok && i < len(vals) && vals[i] != nil {
					e.Attrs[k] = vals[i]
				}
			}
			e.Name, _ = e.Attrs["name"].(string)
			if typ == routerconfig.EntityRouter {
				e.Name, _ = e.Attrs["id"].(string)
			}
			out = append(out, e)
		}
		if len(rows) < queryPage {
			return out, nil
		}
	}
}

// Create creates an entity with its attributes.
func (c *Client) Create(ctx context.Context, e routerconfig.Entity) error {
	attrs := make(map[string]any, len(e.Attrs))
	for k, v := range e.Attrs {
		attrs[k] = amqpValue(v)
	}
	_, err := c.call(ctx, "CREATE", map[string]any{"type": schemaPrefix + e.Type, "name": e.Name}, attrs)
	return err
}

// Delete deletes the entity of typ named name.
func (c *Client) Delete(ctx context.Context, typ, name string) error {
	_, err := c.call(ctx, "DELETE", map[string]any{"type": schemaPrefix + typ, "name": name}, nil)
	return err
}

// amqpValue turns a JSON-decoded value into one AMQP encodes: numbers as
// integers where they are, nested maps and lists alike.
func amqpValue(v any) any {
	switch x := v.(type) {
	case interface{ Int64() (int64, error) }:
		if n, err := x.Int64(); err == nil {
			return n
		}
		return fmt.Sprint(x)
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = amqpValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = amqpValue(e)
		}
		return out
	default:
		return v
	}
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int32:
		return int(x), true
	case int64:
		return int(x), true
	case uint32:
		return int(x), true
	case uint64:
		return int(x), true
	default:
		return 0, false
	}
}
