package ipclab.payload;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.group.ChannelGroup;
import io.netty.util.concurrent.ScheduledFuture;
import io.quarkus.runtime.Quarkus;
import io.quarkus.vertx.http.HttpServerStart;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.impl.VertxInternal;
import io.vertx.core.net.impl.ConnectionBase;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.ObservesAsync;
import java.lang.reflect.Field;
import java.util.concurrent.TimeUnit;

/**
 * The head, read and idle timeouts of the suite's other servers ({@link Limits},
 * {@code services/limits.py}) on Quarkus's HTTP server, which has none of the first two
 * (Vert.x 4.5 has no header timeout, and its idle timeout counts a request still being
 * answered as idle, so Quarkus's is left at 30 min).
 *
 * <p>A connection's deadline runs from its opening, and from the first byte of each later
 * request, to the end of the request's head ({@link Limits#HEADER_TIMEOUT_S}), then to the
 * end of its body ({@link Limits#READ_TIMEOUT_S} from the same start); while the role
 * answers, none; after the answer, {@link Limits#IDLE_TIMEOUT_S} until the next request's
 * first byte. Past a deadline the connection is closed without an answer, as the Python and
 * Go servers do.
 *
 * <p>How: Quarkus offers no hook at a connection's opening (Vert.x's
 * {@code connectionHandler} must be set before the server listens, and Quarkus sets its own
 * only for a connection limit). Once the server listens ({@link HttpServerStart}), a handler
 * is put first in the pipeline of its listening channel (found through Vert.x's internals:
 * the shared server's {@code bindFuture}); it puts a {@link Connection} first in the
 * pipeline of every channel accepted from then on, which sees each byte as it arrives. The
 * router tells it when a head and a body are in and when the answer is out
 * ({@link #headComplete}, {@link #bodyComplete}). A connection accepted before the hook (in
 * the moment between listening and the event) gets the deadlines from its next request on.
 * If the internals are not there (another Vert.x), the role exits (status 2) rather than
 * serve without them.
 */
@ApplicationScoped
public class Deadlines {
    static final String ACCEPT = "ipclab-accept";
    static final String CONNECTION = "ipclab-deadlines";
    private static final AcceptHook ACCEPT_HOOK = new AcceptHook();

    void install(@ObservesAsync HttpServerStart start, Vertx vertx) {
        try {
            install(vertx);
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("ipclab-payload: the connection deadlines cannot be installed "
                    + "(Vert.x internals not as expected): " + e);
            Quarkus.asyncExit(2);
        }
    }

    /** The accept hook on every listening channel of ``vertx``'s HTTP servers, and the
     * deadlines on the connections they accepted before it. */
    static synchronized void install(Vertx vertx) throws ReflectiveOperationException {
        var servers = ((VertxInternal) vertx).sharedHttpServers().values();
        if (servers.isEmpty()) {
            throw new IllegalStateException("no HTTP server is listening");
        }
        for (Object server : servers) {
            Channel listener = (Channel) ((io.vertx.core.Future<?>) field(server, "bindFuture"))
                    .result();
            if (listener.pipeline().get(ACCEPT) == null) {
                listener.pipeline().addFirst(ACCEPT, ACCEPT_HOOK);
            }
            ChannelGroup accepted = (ChannelGroup) field(field(server, "channelBalancer"),
                    "channelGroup");
            for (Channel child : accepted) {
                child.eventLoop().execute(() -> guard(child, false));
            }
        }
    }

    private static Object field(Object of, String name) throws ReflectiveOperationException {
        for (Class<?> c = of.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(of);
            } catch (NoSuchFieldException e) {
                // a superclass's
            }
        }
        throw new NoSuchFieldException(of.getClass().getName() + "." + name);
    }

    private static void guard(Channel channel, boolean fresh) {
        if (channel.pipeline().get(CONNECTION) == null) {
            channel.pipeline().addFirst(CONNECTION, new Connection(fresh));
        }
    }

    /** Router, first handler: the request's head is in. */
    static void headComplete(RoutingContext ctx) {
        Connection c = of(ctx);
        if (c != null) {
            c.onLoop(c::headComplete);
            ctx.addEndHandler(done -> c.onLoop(c::answered));
        }
        ctx.next();
    }

    /** Router, after the body handler: the request's body is in. */
    static void bodyComplete(RoutingContext ctx) {
        Connection c = of(ctx);
        if (c != null) {
            c.onLoop(c::bodyComplete);
        }
        ctx.next();
    }

    private static Connection of(RoutingContext ctx) {
        HttpConnection connection = ctx.request().connection();
        if (connection instanceof ConnectionBase base) {
            return base.channel().pipeline().get(Connection.class);
        }
        return null;
    }

    /** On the listening channel: every accepted channel gets a {@link Connection} first. */
    @ChannelHandler.Sharable
    static final class AcceptHook extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Channel child) {
                guard(child, true);
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** One connection's deadline (on its event loop only). */
    static final class Connection extends ChannelInboundHandlerAdapter {
        private enum State { HEAD, BODY, ANSWERING, IDLE, UNKNOWN }

        private State state;
        private long began;
        private int pending;
        private ChannelHandlerContext ctx;
        private ScheduledFuture<?> timer;

        Connection(boolean fresh) {
            state = fresh ? State.HEAD : State.UNKNOWN;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext context) {
            ctx = context;
            began = System.nanoTime();
            if (state == State.HEAD) {
                arm(began, Limits.HEADER_TIMEOUT_S);
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext context, Object msg) {
            if (state == State.IDLE) { // the next request's first byte
                state = State.HEAD;
                began = System.nanoTime();
                arm(began, Limits.HEADER_TIMEOUT_S);
            }
            context.fireChannelRead(msg);
        }

        @Override
        public void channelInactive(ChannelHandlerContext context) {
            cancel();
            context.fireChannelInactive();
        }

        void onLoop(Runnable step) {
            if (ctx == null) {
                return;
            }
            if (ctx.executor().inEventLoop()) {
                step.run();
            } else {
                ctx.executor().execute(step);
            }
        }

        void headComplete() {
            pending++;
            state = State.BODY;
            arm(began, Limits.READ_TIMEOUT_S);
        }

        void bodyComplete() {
            state = State.ANSWERING;
            cancel();
        }

        void answered() {
            pending = Math.max(0, pending - 1);
            began = System.nanoTime();
            if (pending > 0) {
                state = State.ANSWERING;
                cancel();
                return;
            }
            state = State.IDLE;
            arm(began, Limits.IDLE_TIMEOUT_S);
        }

        private void arm(long from, double seconds) {
            cancel();
            long left = from + (long) (seconds * 1e9) - System.nanoTime();
            timer = ctx.executor().schedule(() -> ctx.channel().close(), Math.max(0, left),
                    TimeUnit.NANOSECONDS);
        }

        private void cancel() {
            if (timer != null) {
                timer.cancel(false);
                timer = null;
            }
        }
    }
}
