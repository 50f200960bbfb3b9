/* A program linked with a known build id (src/collect/CMakeLists.txt) for build_id_test. */
int main(void) { return 0; }
