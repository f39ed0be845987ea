package ipclab.coap;

import java.util.LinkedHashMap;
import java.util.Map;

import org.eclipse.californium.core.config.CoapConfig;
import org.eclipse.californium.elements.config.Configuration;
import org.eclipse.californium.elements.config.UdpConfig;

/**
 * The adapters' socket, keep-alive and thread settings, stated in one place and recorded in
 * the run's manifest ({@link RuntimeReport}, {@code settings}).
 *
 * <ul>
 * <li>The egress's HTTP server (the JDK's {@code com.sun.net.httpserver}): TCP_NODELAY on
 * every accepted socket ({@code sun.net.httpserver.nodelay}; the JDK's default is false).
 * The JDK's server writes an answer's head and its body in two writes; with Nagle's algorithm
 * on, the body waited in the kernel until the client acknowledged the head, and a client
 * delays that ACK (Linux: 40 ms), so every answer through the egress took 40-50 ms whatever
 * the load (issue 46; bench/californium_hops.py). Keep-alive: an idle connection closed after
 * {@code --server-idle-s} (the services' IDLE_TIMEOUT_S; the JDK's default is 30 s), at most
 * 200 idle ones kept (the JDK's default). A request is handled on a thread of a cached pool
 * (one per request in flight: it waits for its CoAP answer).
 * <li>The ingress's HTTP client (the JDK's {@code java.net.http}): TCP_NODELAY is the JDK's
 * own (it sets it on every connection, no setting); keep-alive, an idle connection closed
 * after {@code --client-keepalive-s} (under the service's own idle timeout, so that the
 * client never reuses one the service is closing; the JDK's default is 1,200 s), at most
 * {@code --pool} idle connections kept (the JDK's default: no bound); its callbacks on
 * {@link #CLIENT_THREADS} threads, its I/O on the JDK's one selector thread.
 * <li>Californium's UDP endpoints: no Nagle on UDP (each message is one datagram); one
 * receiver and one sender thread per endpoint (Californium's default on up to 3 processors,
 * 2 on more: fixed here, whatever the host), the kernel's buffer sizes, the protocol stages
 * of every endpoint of the process on one pool of one thread per processor (Californium's
 * default size), up to {@code --pool} client endpoints per service.
 * </ul>
 *
 * A JDK property given on the JVM's command line ({@code -D}, e.g. through
 * {@code IPCLAB_JVM_OPTIONS}) wins over the value here: the diagnostic sets
 * {@code -Dsun.net.httpserver.nodelay=false} to show the stall; the manifest records what was
 * in effect.
 */
final class Sockets {
    static final int CLIENT_THREADS = 2;
    static final int SERVER_MAX_IDLE = 200;

    private Sockets() {
    }

    /** The JDK's properties for {@code args}, each the value in effect (set here unless the
     * command line set it); read by the JDK when its HTTP classes load, so called first. */
    static Map<String, String> applyJdk(Args args) {
        Map<String, String> want = new LinkedHashMap<>();
        want.put("sun.net.httpserver.nodelay", "true");
        want.put("sun.net.httpserver.idleInterval", String.valueOf(args.serverIdleS));
        want.put("sun.net.httpserver.maxIdleConnections", String.valueOf(SERVER_MAX_IDLE));
        want.put("jdk.httpclient.keepalive.timeout", String.valueOf(args.clientKeepaliveS));
        want.put("jdk.httpclient.connectionPoolSize", String.valueOf(args.pool));
        Map<String, String> effective = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : want.entrySet()) {
            if (System.getProperty(e.getKey()) == null) {
                System.setProperty(e.getKey(), e.getValue());
            }
            effective.put(e.getKey(), System.getProperty(e.getKey()));
        }
        return effective;
    }

    /** Californium's thread settings, set on {@code config}, and their values. */
    static Map<String, String> applyCoap(Configuration config) {
        config.set(UdpConfig.UDP_RECEIVER_THREAD_COUNT, 1);
        config.set(UdpConfig.UDP_SENDER_THREAD_COUNT, 1);
        config.set(CoapConfig.PROTOCOL_STAGE_THREAD_COUNT, Runtime.getRuntime().availableProcessors());
        Map<String, String> out = new LinkedHashMap<>();
        out.put("udp_receiver_threads", String.valueOf(config.get(UdpConfig.UDP_RECEIVER_THREAD_COUNT)));
        out.put("udp_sender_threads", String.valueOf(config.get(UdpConfig.UDP_SENDER_THREAD_COUNT)));
        out.put("coap_stage_threads", String.valueOf(config.get(CoapConfig.PROTOCOL_STAGE_THREAD_COUNT)));
        out.put("client_threads", String.valueOf(CLIENT_THREADS));
        return out;
    }
}
