package ipclab.coap;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.eclipse.californium.core.coap.MessageObserverAdapter;
import org.eclipse.californium.core.coap.Request;
import org.eclipse.californium.core.coap.Response;
import org.eclipse.californium.core.network.CoapEndpoint;
import org.eclipse.californium.elements.config.Configuration;

/**
 * A pool of client endpoints (UDP sockets) for one peer, one per exchange in flight: the fix
 * the thesis made in Californium (a pool of endpoint managers), and what the Python adapters
 * do (services/transports/coap.py, _Contexts). An exchange takes an idle endpoint, or opens
 * one while fewer than {@code size} are in use, and gives it back when answered; Californium
 * keeps a block-wise transfer's state per endpoint and URI, so two exchanges to one path in
 * flight on one endpoint would take each other's blocks (the mix-up the thesis found). An
 * endpoint whose exchange failed on the network is destroyed; one whose exchange was cut
 * short (deadline) lingers {@code LINGER_S} before it is destroyed, so that the late answer
 * finds the port open.
 */
final class Pool {
    static final long LINGER_S = 10;

    /** No answer within the deadline (the adapter answers 504). */
    static final class Timeout extends Exception {
        Timeout(String message) {
            super(message);
        }
    }

    /** The peer cannot be reached (the adapter answers 502). */
    static final class Unavailable extends Exception {
        Unavailable(String message) {
            super(message);
        }
    }

    private final String name;
    private final InetSocketAddress peer;
    private final Configuration config;
    private final ScheduledExecutorService main;
    private final ScheduledExecutorService secondary;
    private final Semaphore slots;
    private final ConcurrentLinkedDeque<CoapEndpoint> idle = new ConcurrentLinkedDeque<>();

    Pool(String name, InetSocketAddress peer, int size, Configuration config,
            ScheduledExecutorService main, ScheduledExecutorService secondary) {
        this.name = name;
        this.peer = peer;
        this.config = config;
        this.main = main;
        this.secondary = secondary;
        this.slots = new Semaphore(size);
    }

    InetSocketAddress peer() {
        return peer;
    }

    /** The address this host sends from to reach the peer (a connect sends nothing). */
    private InetAddress sourceAddress() throws IOException {
        try (DatagramSocket probe = new DatagramSocket()) {
            probe.connect(peer);
            return probe.getLocalAddress();
        }
    }

    private CoapEndpoint open() throws IOException {
        CoapEndpoint endpoint = new CoapEndpoint.Builder()
                .setConfiguration(config)
                .setInetSocketAddress(new InetSocketAddress(sourceAddress(), 0))
                .setOptionRegistry(Mapping.OPTIONS)
                .setLoggingTag(name)
                .build();
        Logging.install(endpoint);
        endpoint.setExecutors(main, secondary);
        endpoint.start();
        return endpoint;
    }

    private void destroy(CoapEndpoint endpoint) {
        endpoint.destroy();
    }

    /** One endpoint open before the first call. */
    void start() throws IOException {
        idle.add(open());
    }

    /** {@code request}'s response, within {@code timeoutMs}. */
    Response exchange(Request request, long timeoutMs)
            throws Timeout, Unavailable, InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        if (!slots.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            throw new Timeout(name + " did not answer within " + timeoutMs + " ms (no endpoint)");
        }
        CoapEndpoint endpoint = null;
        String fate = "retire";
        try {
            endpoint = idle.pollLast();
            if (endpoint == null) {
                endpoint = open();
            }
            CompletableFuture<Response> answer = new CompletableFuture<>();
            request.addMessageObserver(new MessageObserverAdapter() {
                @Override
                public void onResponse(Response response) {
                    answer.complete(response);
                }

                @Override
                public void onTimeout() {
                    answer.completeExceptionally(new TimeoutException("retransmissions exhausted"));
                }

                @Override
                public void onReject() {
                    answer.completeExceptionally(new IOException("rejected (RST)"));
                }

                @Override
                public void onCancel() {
                    answer.completeExceptionally(new IOException("cancelled"));
                }

                @Override
                public void onSendError(Throwable error) {
                    answer.completeExceptionally(new IOException(error));
                }
            });
            endpoint.sendRequest(request);
            Response response = answer.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
            fate = "reuse";
            idle.addLast(endpoint);
            return response;
        } catch (TimeoutException e) {
            request.cancel();
            throw new Timeout(name + " did not answer within " + timeoutMs + " ms");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TimeoutException) {
                throw new Timeout(name + ": " + e.getCause().getMessage());
            }
            fate = "discard";
            throw new Unavailable(name + ": " + e.getCause());
        } catch (IOException e) {
            fate = "none";
            throw new Unavailable(name + ": no endpoint: " + e);
        } finally {
            slots.release();
            if (endpoint != null && fate.equals("retire")) {
                CoapEndpoint lingering = endpoint;
                secondary.schedule(() -> destroy(lingering), LINGER_S, TimeUnit.SECONDS);
            } else if (endpoint != null && fate.equals("discard")) {
                destroy(endpoint);
            }
        }
    }

    void close() {
        CoapEndpoint endpoint;
        while ((endpoint = idle.poll()) != null) {
            destroy(endpoint);
        }
    }
}
