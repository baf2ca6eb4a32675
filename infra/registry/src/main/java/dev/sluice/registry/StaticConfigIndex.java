package dev.sluice.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * The list of run-time-editable settings, empty.
 *
 * <p>Apicurio generates this list at build time with a Quarkus extension whose deployment module
 * is not on Maven Central; without it the registry runs with its settings fixed at start-up (the
 * command line), which is all Sluice's tests and {@code sluice up} need.
 */
public class StaticConfigIndex {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
