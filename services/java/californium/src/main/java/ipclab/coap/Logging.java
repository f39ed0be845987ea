package ipclab.coap;

import java.util.concurrent.atomic.LongAdder;

import org.eclipse.californium.core.coap.CoAP;
import org.eclipse.californium.core.coap.EmptyMessage;
import org.eclipse.californium.core.coap.Request;
import org.eclipse.californium.core.coap.Response;
import org.eclipse.californium.core.network.CoapEndpoint;
import org.eclipse.californium.core.network.interceptors.MessageInterceptor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The logging of every message the adapters send and receive, in one of two configurations
 * chosen at run time (the system property {@code ipclab.californium.logging}, else the
 * environment variable {@code IPCLAB_CALIFORNIUM_LOGGING}; default {@code fixed}):
 * <ul>
 * <li>{@code thesis}: what Nyfløtt profiled in the Californium of 2017 (thesis §4.2.5,
 * Listing 4.1, Fig. 9): each message is attached to a log message by string concatenation, so
 * the message's {@code toString()} runs, through {@code StringBuilder.append} and
 * {@code String.valueOf} (the frames of Fig. 9), before the logger drops the message at its
 * level ({@code debug}, below slf4j-simple's {@code info}: discarded, as in the thesis's run);
 * <li>{@code fixed}: Californium 3.11 as it is (its own logging parameterised since the
 * thesis's pull request, Listing 4.2): no message is built; nothing is installed.
 * </ul>
 * The configuration is printed in the adapter's runtime report ({@code settings.logging}), so
 * every run's manifest says which one ran.
 */
final class Logging implements MessageInterceptor {
    static final String PROPERTY = "ipclab.californium.logging";
    static final String ENV = "IPCLAB_CALIFORNIUM_LOGGING";
    private static final Logger LOGGER = LoggerFactory.getLogger(Logging.class);
    /** Log messages built (thesis only), and their characters: the contract test reads them. */
    static final LongAdder BUILT = new LongAdder();
    static final LongAdder CHARS = new LongAdder();

    private Logging() {
    }

    /** The configuration in effect: {@code thesis} or {@code fixed}. */
    static String mode() {
        String value = System.getProperty(PROPERTY);
        if (value == null || value.isEmpty()) {
            value = System.getenv(ENV);
        }
        if (value == null || value.isEmpty()) {
            return "fixed";
        }
        if (!value.equals("thesis") && !value.equals("fixed")) {
            throw new IllegalArgumentException(PROPERTY + " / " + ENV + " is " + value
                    + ": thesis or fixed");
        }
        return value;
    }

    /** The endpoint with the configuration's logging (thesis: the interceptor). */
    static CoapEndpoint install(CoapEndpoint endpoint) {
        if (mode().equals("thesis")) {
            endpoint.addInterceptor(new Logging());
        }
        return endpoint;
    }

    /** Listing 4.1's {@code "..." + message}, as javac 8 compiled it (javac 17's
     * invokedynamic concatenation would hide the thesis's frames). */
    private static void eager(String what, Object message) {
        String text = new StringBuilder().append(what).append(message).toString();
        BUILT.increment();
        CHARS.add(text.length());
        LOGGER.debug(text);
    }

    @Override
    public void sendRequest(Request request) {
        eager("Sending request ", request);
    }

    @Override
    public void sendResponse(Response response) {
        eager("Sending response ", response);
    }

    @Override
    public void sendEmptyMessage(EmptyMessage message) {
        eager("Sending empty message ", message);
    }

    @Override
    public void receiveRequest(Request request) {
        eager("Receiving request ", request);
    }

    @Override
    public void receiveResponse(Response response) {
        eager("Receiving response ", response);
    }

    @Override
    public void receiveEmptyMessage(EmptyMessage message) {
        eager("Receiving empty message ", message);
    }

    /**
     * The contract check: {@code java -cp <lib>/* ipclab.coap.Logging} runs one request and
     * one response through each configuration's logging and prints, per configuration, the
     * log messages built and their characters (thesis: four, fixed: none).
     */
    public static void main(String[] argv) {
        StringBuilder out = new StringBuilder("{");
        for (String mode : new String[] {"thesis", "fixed"}) {
            System.setProperty(PROPERTY, mode);
            BUILT.reset();
            CHARS.reset();
            MessageInterceptor logging = mode().equals("thesis") ? new Logging() : null;
            Request request = Request.newGet();
            request.setURI("coap://127.0.0.1:5683/flight/rest/api/flights/queryflights");
            Response response = new Response(CoAP.ResponseCode.CONTENT);
            response.setPayload("{\"tripFlights\": []}");
            if (logging != null) {
                logging.sendRequest(request);
                logging.receiveRequest(request);
                logging.sendResponse(response);
                logging.receiveResponse(response);
            }
            out.append(out.length() > 1 ? ", " : "").append('"').append(mode).append("\": {\"built\": ")
                    .append(BUILT.sum()).append(", \"chars\": ").append(CHARS.sum()).append('}');
        }
        System.out.println(out.append('}'));
    }
}
