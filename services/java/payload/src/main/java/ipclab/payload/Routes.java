package ipclab.payload;

import io.quarkus.runtime.StartupEvent;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RequestBody;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The role this process plays, on Quarkus's HTTP server (Vert.x, JVM mode): every request
 * is read whole (up to the body limit, else a 413 as in Python), handed to the role on a
 * worker thread (the handlers block: serialisation, the edge's call) and answered as the
 * role says, nothing added but {@code content-length}.
 *
 * <p>The role comes from the environment, as every role of the suite
 * ({@code services/serve.py}): {@code IPCLAB_ROLE} {@code data}, or the gateway's name
 * ({@code IPCLAB_GATEWAY}, default {@code gateway}) for the edge service, which calls
 * {@code IPCLAB_ADDR_DATA} with the deadline {@code IPCLAB_CALL_TIMEOUT_S} (default 30 s).
 * Where it listens: {@code IPCLAB_HOST}, {@code IPCLAB_PORT} (application.properties).
 */
@ApplicationScoped
public class Routes {
    private Function<Http.Request, Http.Answer> role;

    void start(@Observes StartupEvent event) {
        RuntimeInfo.print(System.getenv().getOrDefault("IPCLAB_ROLE", ""));
    }

    void routes(@Observes Router router) {
        Map<String, String> env = System.getenv();
        role = role(env, env.getOrDefault("IPCLAB_ROLE", ""));
        long limit = Long.parseLong(env.getOrDefault("IPCLAB_MAX_BODY_BYTES",
                "" + Settings.MAX_BODY_BYTES));
        // the head, read and idle timeouts of the other servers (Deadlines): told when a
        // head and a body are in, and (an end handler) when the answer is out
        router.route().order(-101).handler(Deadlines::headComplete);
        router.route().order(-100).handler(BodyHandler.create(false).setBodyLimit(limit));
        router.route().order(-99).handler(Deadlines::bodyComplete);
        router.route().order(-98).blockingHandler(this::serve, false);
        router.route().order(-100).failureHandler(ctx -> {
            Http.Answer refused = failed(ctx.statusCode(), ctx.failure(), limit).answer();
            if (refused.status() == 413) {
                refused.headers().add(new String[] {"connection", "close"});
            }
            answer(ctx, refused);
        });
    }

    /**
     * The answer to a request that failed outside the role's own answers: a body over the
     * limit (413), the heap exhausted ({@code out_of_memory}, 500: what the memory
     * experiment looks for when the heap, not the container, is too small), anything else
     * (500, {@code failed}).
     */
    static Http.Refused failed(int status, Throwable failure, long limit) {
        if (status == 413) { // the client may still be sending: the answer closes
            return new Http.Refused(413, "too_large", "the body passes " + limit + " bytes");
        }
        if (failure instanceof OutOfMemoryError) {
            return new Http.Refused(500, "out_of_memory", failure.toString());
        }
        return new Http.Refused(status > 0 ? status : 500, "failed", String.valueOf(failure));
    }

    static Function<Http.Request, Http.Answer> role(Map<String, String> env, String name) {
        if (name.equals("data")) {
            return new DataService(Settings.fromEnv(env))::handle;
        }
        if (name.equals(env.getOrDefault("IPCLAB_GATEWAY", "gateway"))) {
            String upstream = env.get("IPCLAB_ADDR_DATA");
            if (upstream == null || upstream.isEmpty()) {
                throw new IllegalArgumentException(
                        "the edge service needs IPCLAB_ADDR_DATA (host:port)");
            }
            double timeout = Double.parseDouble(env.getOrDefault("IPCLAB_CALL_TIMEOUT_S", "30"));
            return new EdgeService("http://" + upstream, timeout)::handle;
        }
        throw new IllegalArgumentException("unknown role '" + name
                + "' of the payload domain; its service: data");
    }

    private void serve(RoutingContext ctx) {
        Map<String, String> headers = new HashMap<>();
        MultiMap given = ctx.request().headers();
        for (String name : given.names()) {
            headers.put(name.toLowerCase(Locale.ROOT), given.get(name));
        }
        RequestBody body = ctx.body();
        Buffer buffer = body == null ? null : body.buffer();
        String query = ctx.request().query();
        Http.Request request = new Http.Request(ctx.request().method().name(),
                ctx.request().path(), query == null ? "" : query, headers,
                buffer == null ? new byte[0] : buffer.getBytes());
        answer(ctx, role.apply(request));
    }

    private static void answer(RoutingContext ctx, Http.Answer answer) {
        HttpServerResponse response = ctx.response().setStatusCode(answer.status());
        for (String[] h : answer.headers()) {
            response.putHeader(h[0], h[1]);
        }
        if (answer.stream() == null) {
            response.end(Buffer.buffer(answer.body()));
            return;
        }
        if (answer.length() >= 0) {
            response.putHeader("content-length", Long.toString(answer.length()));
        } else {
            response.setChunked(true);
        }
        try (InputStream in = answer.stream()) {
            byte[] chunk = new byte[1 << 16];
            int n;
            while ((n = in.read(chunk)) > 0) {
                while (response.writeQueueFull()) {
                    Thread.sleep(1); // a worker thread: wait for the client to read
                }
                response.write(Buffer.buffer(Arrays.copyOf(chunk, n)));
            }
            response.end();
        } catch (IOException e) { // the data service went away mid-answer: so does this one
            ctx.request().connection().close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ctx.request().connection().close();
        }
    }
}
