package ipclab.coap;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;

import org.eclipse.californium.core.config.CoapConfig;
import org.eclipse.californium.elements.config.Configuration;
import org.eclipse.californium.elements.util.DaemonThreadFactory;
import org.eclipse.californium.elements.util.ExecutorsUtil;

/**
 * The Californium protocol adapters (the native adapter set's CoAP, as Nyfløtt ran it): the
 * {@code egress} role (HTTP/1.1 in, CoAP out, {@link Egress}) or a {@code <service>-ingress}
 * role (CoAP in, HTTP/1.1 out, {@link Ingress}), run by services/adapters/native.py as its
 * proxy child. SIGTERM stops it (the JVM's shutdown hook closes every endpoint).
 */
public final class Adapter {
    static final Mapping.Header TEXT = new Mapping.Header("content-type", "text/plain; charset=utf-8");

    private Adapter() {
    }

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        // the JDK's HTTP settings first: its classes read them once, when they load
        Map<String, String> settings = new LinkedHashMap<>(Sockets.applyJdk(args));
        Configuration config = Mapping.configuration(args.maxBody);
        settings.putAll(Sockets.applyCoap(config));
        settings.put("pool", String.valueOf(args.pool));
        settings.put("logging", Logging.mode()); // thesis | fixed: Logging
        RuntimeReport.print(args.role, settings);
        if ("1".equals(System.getenv("IPCLAB_GC_EVENTS"))) {
            GcEvents.install();
        }
        // the endpoints' protocol stages on one pool for the whole process (one thread per
        // processor, Californium's default: Sockets), their timers on one scheduler
        ScheduledExecutorService main = ExecutorsUtil.newScheduledThreadPool(
                config.get(CoapConfig.PROTOCOL_STAGE_THREAD_COUNT), new DaemonThreadFactory("coap#"));
        ScheduledExecutorService secondary = ExecutorsUtil.newDefaultSecondaryScheduler("coap-timer#");
        Runnable stop;
        if (args.role.equals("egress")) {
            Egress egress = new Egress(args, config, main, secondary);
            egress.start();
            stop = egress::stop;
        } else if (args.role.endsWith("-ingress")) {
            Ingress ingress = new Ingress(args, config, main, secondary);
            ingress.start();
            stop = ingress::stop;
        } else {
            throw new IllegalArgumentException("no adapter role " + args.role);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.run();
            main.shutdownNow();
            secondary.shutdownNow();
        }, "stop"));
        System.err.printf("ipclab californium %s: listening on %s, routes %s%n", args.role,
                args.listen, args.routes);
        Thread.currentThread().join();
    }
}
