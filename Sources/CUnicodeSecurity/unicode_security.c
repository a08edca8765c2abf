// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT

#include "CUnicodeSecurity.h"

#include <pthread.h>
#include <unicode/uspoof.h>

// One checker for the process, made on first use. ICU documents a configured checker as safe to
// use from several threads at once for checks and skeletons.
static USpoofChecker *checker = NULL;
static pthread_once_t made = PTHREAD_ONCE_INIT;

static void make_checker(void) {
    UErrorCode status = U_ZERO_ERROR;
    USpoofChecker *candidate = uspoof_open(&status);
    if (U_FAILURE(status)) return;
    uspoof_setChecks(candidate, USPOOF_RESTRICTION_LEVEL, &status);
    // The level is measured, not enforced, here: the caller decides what it refuses.
    uspoof_setRestrictionLevel(candidate, USPOOF_UNRESTRICTIVE);
    if (U_FAILURE(status)) {
        uspoof_close(candidate);
        return;
    }
    checker = candidate;
}

int32_t spezi_confusable_skeleton(const char *text, int32_t length, char *output, int32_t capacity) {
    pthread_once(&made, make_checker);
    if (checker == NULL) return -1;
    UErrorCode status = U_ZERO_ERROR;
    int32_t written = uspoof_getSkeletonUTF8(checker, 0, text, length, output, capacity, &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) return written;
    return U_FAILURE(status) ? -1 : written;
}

int32_t spezi_restriction_level(const char *text, int32_t length) {
    pthread_once(&made, make_checker);
    if (checker == NULL) return -1;
    UErrorCode status = U_ZERO_ERROR;
    USpoofCheckResult *result = uspoof_openCheckResult(&status);
    if (U_FAILURE(status)) return -1;
    uspoof_check2UTF8(checker, text, length, result, &status);
    URestrictionLevel level = uspoof_getCheckResultRestrictionLevel(result, &status);
    uspoof_closeCheckResult(result);
    if (U_FAILURE(status)) return -1;
    switch (level) {
    case USPOOF_ASCII: return 1;
    case USPOOF_SINGLE_SCRIPT_RESTRICTIVE: return 2;
    case USPOOF_HIGHLY_RESTRICTIVE: return 3;
    case USPOOF_MODERATELY_RESTRICTIVE: return 4;
    case USPOOF_MINIMALLY_RESTRICTIVE: return 5;
    default: return 6;
    }
}
