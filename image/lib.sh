# Shared by image/build.sh and test/cluster/images.sh (sourced; needs SOURCE_DATE_EPOCH).

# pack DIR OUT.tar: a layer whose bytes depend only on the files' contents, modes and names
# (sorted, numeric root ownership, SOURCE_DATE_EPOCH as every file's time).
pack() {
  tar --create --file "$2" --directory "$1" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime --owner=0 --group=0 --numeric-owner .
}
