package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// AMQP 0-9-1 through RabbitMQ, the topology of transports/amqp.py: one queue per service
// ("ipclab.<service>", non-durable, not exclusive, not auto-delete) declared by both sides;
// requests through the default exchange, transient, mandatory; services consume with manual
// acks and prefetch 64, publish the reply to reply_to with the same correlation id, then
// ack; the gateway has one connection, one channel and one exclusive server-named reply
// queue consumed without acks. Body {"op", "request"}; reply {"result"} or {"error", "message"}.

const prefetch = 64

func queueName(service string) string { return "ipclab." + service }

func declare(ch *amqp.Channel, service string) error {
	_, err := ch.QueueDeclare(queueName(service), false, false, false, false, nil)
	return err
}

type amqpRequest struct {
	Op      string         `json:"op"`
	Request map[string]any `json:"request"`
}

func serveAMQP(f *Fixture, service, amqpURL string) error {
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return err
	}
	if err := declare(ch, service); err != nil {
		return err
	}
	deliveries, err := ch.Consume(queueName(service), "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range deliveries {
		go func(d amqp.Delivery) {
			reply := handleAMQP(f, service, d.Body)
			if d.ReplyTo != "" {
				_ = ch.PublishWithContext(context.Background(), "", d.ReplyTo, false, false, amqp.Publishing{
					Body: reply, CorrelationId: d.CorrelationId, DeliveryMode: amqp.Transient,
				})
			}
			_ = d.Ack(false)
		}(d)
	}
	return fmt.Errorf("the broker closed the connection")
}

func handleAMQP(f *Fixture, service string, body []byte) []byte {
	var req amqpRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return encode(map[string]string{"error": "internal", "message": err.Error()})
	}
	values := url.Values{}
	for k, v := range req.Request {
		switch x := v.(type) {
		case float64:
			values.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
		case string:
			values.Set(k, x)
		default:
			values.Set(k, fmt.Sprint(x))
		}
	}
	doc, err := invoke(f, service, req.Op, values)
	if err != nil {
		se := asServiceError(err)
		return encode(map[string]string{"error": se.Code, "message": se.Message})
	}
	return encode(map[string]any{"result": doc})
}

type amqpReply struct {
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

type amqpClients struct {
	conn    *amqp.Connection
	ch      *amqp.Channel
	replyQ  string
	prefix  string
	mu      sync.Mutex
	next    uint64
	pending map[string]chan amqpReply
	stats   struct {
		Published     int            `json:"published"`
		Replies       int            `json:"replies"`
		Unmatched     int            `json:"unmatched"`
		Returned      int            `json:"returned"`
		Pending       int            `json:"pending"`
		PublishedByOp map[string]int `json:"published_by_op"`
	}
}

func newAMQPClients(services []string, amqpURL string) (*amqpClients, error) {
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	for _, s := range services {
		if err := declare(ch, s); err != nil {
			return nil, err
		}
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return nil, err
	}
	replies, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		return nil, err
	}
	c := &amqpClients{conn: conn, ch: ch, replyQ: q.Name, prefix: fmt.Sprintf("%d-", os.Getpid()),
		pending: map[string]chan amqpReply{}}
	c.stats.PublishedByOp = map[string]int{}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() {
		for d := range replies {
			var r amqpReply
			if json.Unmarshal(d.Body, &r) != nil {
				r = amqpReply{Error: "internal", Message: "a non-JSON reply"}
			}
			c.deliver(d.CorrelationId, r, false)
		}
	}()
	go func() {
		for r := range returns {
			c.deliver(r.CorrelationId, amqpReply{Error: "unavailable", Message: "no queue for the request"}, true)
		}
	}()
	return c, nil
}

func (c *amqpClients) deliver(cid string, r amqpReply, returned bool) {
	c.mu.Lock()
	if returned {
		c.stats.Returned++
	} else {
		c.stats.Replies++
	}
	ch, ok := c.pending[cid]
	delete(c.pending, cid)
	if !ok && !returned {
		c.stats.Unmatched++
	}
	c.mu.Unlock()
	if ok {
		ch <- r // buffered: never blocks
	}
}

func (c *amqpClients) Call(ctx context.Context, service, op string, id int64, out any) error {
	request := map[string]int64{}
	if op == "get" {
		request[serviceKey(service)] = id
	}
	body := encode(map[string]any{"op": op, "request": request})
	done := make(chan amqpReply, 1)
	c.mu.Lock()
	cid := c.prefix + strconv.FormatUint(c.next, 10)
	c.next++
	c.pending[cid] = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, cid)
		c.mu.Unlock()
	}()
	err := c.ch.PublishWithContext(ctx, "", queueName(service), true, false, amqp.Publishing{
		Body: body, CorrelationId: cid, ReplyTo: c.replyQ, DeliveryMode: amqp.Transient,
	})
	if err != nil {
		return unavailable(fmt.Sprintf("broker: %v", err))
	}
	c.mu.Lock()
	c.stats.Published++
	c.stats.PublishedByOp[op]++
	c.mu.Unlock()
	select {
	case r := <-done:
		if r.Error != "" {
			return fromCode(r.Error, r.Message)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return &ServiceError{"internal", fmt.Sprintf("%s: a bad reply: %v", service, err)}
			}
		}
		return nil
	case <-ctx.Done():
		return timeout(service + " did not answer within the deadline")
	}
}

func (c *amqpClients) Stats() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Pending = len(c.pending)
	byOp := map[string]int{}
	for k, v := range c.stats.PublishedByOp {
		byOp[k] = v
	}
	s.PublishedByOp = byOp
	return s
}

func (c *amqpClients) Close() { _ = c.conn.Close() }
